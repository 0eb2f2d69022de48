//===- Stats.cpp - Per-op counters and their JSON dump --------------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdio>
#include <fstream>

using namespace gradcomm;

/// JSON string literal of `text` (names are user strings).
static std::string quote(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// This rank's counters as one JSON object.
static std::string rankJson() {
  const Context &ctx = context();
  std::string json = "{\"rank\": " + std::to_string(ctx.rank) +
                     ", \"size\": " + std::to_string(ctx.size) + ", \"ops\": {";
  bool first = true;
  for (const auto &[name, s] : ctx.stats) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.9g", s.seconds);
    json += std::string(first ? "" : ", ") + quote(name) +
            ": {\"calls\": " + std::to_string(s.calls) +
            ", \"messages\": " + std::to_string(s.messages) +
            ", \"value_bytes_sent\": " + std::to_string(s.value_bytes_sent) +
            ", \"value_bytes_received\": " +
            std::to_string(s.value_bytes_received) +
            ", \"index_bytes_sent\": " + std::to_string(s.index_bytes_sent) +
            ", \"index_bytes_received\": " +
            std::to_string(s.index_bytes_received) +
            ", \"seconds\": " + seconds +
            ", \"last_union_size\": " + std::to_string(s.last_union_size) + "}";
    first = false;
  }
  return json + "}}";
}

gradcomm_status gradcomm_stats_get(const char *opName,
                                   gradcomm_op_stats *stats) {
  return guarded("stats_get", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "stats", stats));
    const auto &all = context().stats;
    auto it = all.find(opName ? opName : "");
    *stats = it == all.end() ? gradcomm_op_stats{} : it->second;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_stats_reset(void) {
  return guarded("stats_reset", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    context().stats.clear();
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_stats_dump(const char *path) {
  return guarded("stats_dump", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    // Job-wide, whichever group is active.
    WorldScope world;
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "path", path));
    const Context &ctx = context();
    std::string mine = rankJson();
    // Every rank's record, padded to the longest (a rare, small call: the
    // transport needs no variable-size gather for it).
    int32_t length = static_cast<int32_t>(mine.size());
    std::vector<int32_t> lengths(ctx.size);
    GRADCOMM_RETURN_IF_ERROR(allGather(call, &length, 1, Element::Int32,
                                       lengths.data(),
                                       "all-gather (record lengths)"));
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    mine.resize(longest, ' ');
    std::string all(longest * ctx.size, ' ');
    GRADCOMM_RETURN_IF_ERROR(allGather(call, mine.data(), longest,
                                       Element::Byte, all.data(),
                                       "all-gather (records)"));
    // Rank 0's write result decides for everyone, so no rank reports
    // success for a file that was not written.
    int32_t ok = 1;
    if (ctx.rank == 0) {
      std::ofstream file(path, std::ios::trunc);
      file << "{\"ranks\": [";
      for (int r = 0; r < ctx.size; ++r)
        file << (r ? ",\n  " : "\n  ") << all.substr(r * longest, lengths[r]);
      file << "\n]}\n";
      file.close();
      ok = file ? 1 : 0;
    }
    GRADCOMM_RETURN_IF_ERROR(
        broadcast(call, &ok, 1, Element::Int32, 0, "broadcast (write result)"));
    if (!ok)
      return call.fail(GRADCOMM_ERR_IO,
                       "rank 0 cannot write '" + std::string(path) + "'");
    return GRADCOMM_OK;
  });
}

gradcomm_op_stats &gradcomm::opStats(const char *name) {
  return context().stats[name ? name : ""];
}
