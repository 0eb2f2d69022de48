//===- StateRegistry.cpp - Named state, checkpoints -----------------------===//
//
// Part of the GradComm project.
//
// Checkpoint file, one per rank (`<path>.rank<r>`), little-endian:
//
//   char[8]  magic "GCSTATE\0"
//   u32      format version (2; version 1 files, without the generation,
//            are read as generation 0)
//   u32      rank, u32 group size
//   u64      generation (version 2)
//   u64      number of states
//   per state, in name order:
//     u32 name length, name bytes, u64 step, u64 element count,
//     f32[count] memory
//   u64      FNV-1a 64 checksum of every byte before it
//
// Generations. Save is collective and two-phase: every rank streams
// generation G (one more than the newest any rank has) to
// `<path>.rank<r>.tmp` and fsyncs it; only when every rank succeeded (the
// agreement) does each rank move its current file to `<path>.rank<r>.prev`
// and the new one into place (fsync of the directory after each rename).
// The previous generation therefore survives until the new one is in place
// everywhere, and a failed save leaves no temporary file. Restore is
// collective too: it takes the newest generation that every rank has, as
// its current or its previous file, and that parses and checks completely
// (checksum, header, no state twice). It builds a new registry first and
// swaps it in only when everything is valid, so a bad file changes
// nothing. gradcomm_state_generation says which generation was restored.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

using namespace gradcomm;

namespace {

constexpr char kMagic[8] = {'G', 'C', 'S', 'T', 'A', 'T', 'E', '\0'};
constexpr uint32_t kVersion = 2;

/// Reads from a byte range, failing (not crashing) past its end.
class Reader {
public:
  Reader(const std::string &data, size_t end) : data(data), end(end) {}
  template <typename T> bool get(T &value) {
    if (end - offset < sizeof(T))
      return false;
    std::memcpy(&value, data.data() + offset, sizeof(T));
    offset += sizeof(T);
    return true;
  }
  bool bytes(void *out, size_t size) {
    if (end - offset < size)
      return false;
    if (size == 0) // `out` may be null (a counter-only state's memory)
      return true;
    std::memcpy(out, data.data() + offset, size);
    offset += size;
    return true;
  }
  bool done() const { return offset == end; }

private:
  const std::string &data;
  size_t end;
  size_t offset = 0;
};

std::string rankPath(const char *path) {
  return std::string(path) + ".rank" + std::to_string(context().rank);
}

/// A host view of a state's memory (staged from the device on CUDA).
gradcomm_status hostMemory(const Call &call, const State &state,
                           std::vector<uint8_t> &staging, const float **host) {
  const void *view = nullptr;
  GRADCOMM_RETURN_IF_ERROR(hostView(
      call, state.data(), sizeof(float) * state.count, staging, &view));
  *host = static_cast<const float *>(view);
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_state_declare(const char *name, int64_t count) {
  return guarded("state_declare", name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "name", name));
    GRADCOMM_RETURN_IF_ERROR(
        requireRange(call, "count", count, 0, INT64_MAX / 8));
    State *state;
    return lookupState(call, name, count, state);
  });
}

gradcomm_status gradcomm_state_reset(const char *name) {
  return guarded("state_reset", name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(
        requireNoRequestInFlight(call, "resetting a state"));
    auto reset = [&](State &state) {
      state.step = 0;
      return zeroBuffer(call, state.data(), state.count);
    };
    auto &states = context().states;
    if (!name) {
      for (auto &entry : states)
        GRADCOMM_RETURN_IF_ERROR(reset(entry.second));
      return GRADCOMM_OK;
    }
    auto it = states.find(name);
    if (it == states.end())
      return call.fail(GRADCOMM_ERR_STATE,
                       "no state named '" + std::string(name) + "'");
    return reset(it->second);
  });
}

gradcomm_status gradcomm_state_step(const char *name, uint64_t *step) {
  return guarded("state_step", name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "name", name));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "step", step));
    auto &states = context().states;
    auto it = states.find(name);
    if (it == states.end())
      return call.fail(GRADCOMM_ERR_STATE,
                       "no state named '" + std::string(name) + "'");
    *step = it->second.step;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_state_read(const char *name, float *out,
                                    int64_t count) {
  return guarded("state_read", name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "name", name));
    auto &states = context().states;
    auto it = states.find(name);
    if (it == states.end())
      return call.fail(GRADCOMM_ERR_STATE,
                       "no state named '" + std::string(name) + "'");
    if (it->second.count != count)
      return call.fail(GRADCOMM_ERR_STATE,
                       "state has " + std::to_string(it->second.count) +
                           " elements, asked for " + std::to_string(count));
    if (count > 0) {
      GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "out", out));
      if (extensions().refreshState)
        GRADCOMM_RETURN_IF_ERROR(
            extensions().refreshState(call, name, it->second));
      GRADCOMM_RETURN_IF_ERROR(backend().copyToHost(
          call, out, it->second.data(), sizeof(float) * count));
    }
    return GRADCOMM_OK;
  });
}

namespace {

/// Writes a checkpoint file as it goes, keeping the running checksum.
class StreamWriter {
public:
  explicit StreamWriter(FILE *file) : file(file) {}

  void bytes(const void *data, size_t size) {
    hash = fnv1a(data, size, hash);
    if (size > 0 && std::fwrite(data, 1, size, file) != size)
      ok = false;
  }
  template <typename T> void value(T data) { bytes(&data, sizeof(T)); }
  uint64_t checksum() const { return hash; }
  bool good() const { return ok; }

private:
  FILE *file;
  uint64_t hash = kFnvOffsetBasis;
  bool ok = true;
};

/// Something other than a regular file at `path` (a directory, a device)
/// is refused by name; a missing file is fine here.
gradcomm_status requireRegularOrMissing(const Call &call,
                                        const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode))
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_IO,
                   "'" + path + "' exists and is not a regular file");
}

/// fsync of the directory holding `path`, so a rename survives a crash.
void syncDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string directory =
      slash == std::string::npos ? "." : path.substr(0, slash + 1);
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Streams this rank's registry as generation `generation` to `path`
/// (created or truncated) and fsyncs it.
gradcomm_status writeCheckpoint(const Call &call, const std::string &path,
                                uint64_t generation) {
  const Context &ctx = context();
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return call.fail(GRADCOMM_ERR_IO,
                     "cannot write '" + path + "': " + std::strerror(errno));
  auto fail = [&](const std::string &why) {
    std::fclose(file);
    return call.fail(GRADCOMM_ERR_IO, why);
  };
  StreamWriter writer(file);
  writer.bytes(kMagic, sizeof(kMagic));
  writer.value<uint32_t>(kVersion);
  writer.value<uint32_t>(static_cast<uint32_t>(ctx.rank));
  writer.value<uint32_t>(static_cast<uint32_t>(ctx.size));
  writer.value<uint64_t>(generation);
  writer.value<uint64_t>(ctx.states.size());
  std::vector<uint8_t> staging;
  for (const auto &[name, state] : ctx.states) {
    const float *host = nullptr;
    if (hostMemory(call, state, staging, &host) != GRADCOMM_OK)
      return fail(gradcomm_last_error());
    writer.value<uint32_t>(static_cast<uint32_t>(name.size()));
    writer.bytes(name.data(), name.size());
    writer.value<uint64_t>(state.step);
    writer.value<uint64_t>(static_cast<uint64_t>(state.count));
    writer.bytes(host, sizeof(float) * state.count);
  }
  uint64_t checksum = writer.checksum();
  if (std::fwrite(&checksum, sizeof(checksum), 1, file) != 1 ||
      !writer.good() || std::fflush(file) != 0 || ::fsync(fileno(file)) != 0)
    return fail("cannot write '" + path + "': " + std::strerror(errno));
  if (std::fclose(file) != 0)
    return call.fail(GRADCOMM_ERR_IO, "cannot write '" + path + "'");
  return GRADCOMM_OK;
}

/// One state as a checkpoint file holds it (host memory).
struct SavedState {
  uint64_t step = 0;
  int64_t count = 0;
  std::vector<float> memory;
};

/// A parsed checkpoint file: its generation and its states.
struct Checkpoint {
  bool valid = false;
  uint64_t generation = 0;
  std::map<std::string, SavedState> states;
};

/// Parses and checks `path` completely; on failure records why (the
/// message names the file) and returns the status.
gradcomm_status readCheckpoint(const Call &call, const std::string &path,
                               Checkpoint &checkpoint) {
  const Context &ctx = context();
  GRADCOMM_RETURN_IF_ERROR(requireRegularOrMissing(call, path));
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return call.fail(GRADCOMM_ERR_IO, "cannot open '" + path + "'");
  std::string data((std::istreambuf_iterator<char>(file)),
                   std::istreambuf_iterator<char>());
  auto corrupt = [&](const std::string &why) {
    return call.fail(GRADCOMM_ERR_IO, "checkpoint '" + path + "' rejected: " +
                                          why + "; live state unchanged");
  };
  if (data.size() < sizeof(kMagic) + sizeof(uint64_t) ||
      std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("not a GradComm state file");
  size_t body = data.size() - sizeof(uint64_t);
  uint64_t stored;
  std::memcpy(&stored, data.data() + body, sizeof(stored));
  if (stored != fnv1a(data.data(), body))
    return corrupt("checksum mismatch (corrupt or truncated)");

  Reader reader(data, body);
  char magic[sizeof(kMagic)];
  uint32_t version = 0, rank = 0, size = 0;
  uint64_t generation = 0, numStates = 0;
  reader.bytes(magic, sizeof(magic));
  if (!reader.get(version) || !reader.get(rank) || !reader.get(size))
    return corrupt("truncated header");
  if (version != kVersion && version != 1)
    return corrupt("format version " + std::to_string(version) +
                   ", this runtime reads 1 and " + std::to_string(kVersion));
  if ((version >= 2 && !reader.get(generation)) || !reader.get(numStates))
    return corrupt("truncated header");
  if (rank != static_cast<uint32_t>(ctx.rank) ||
      size != static_cast<uint32_t>(ctx.size))
    return corrupt("written by rank " + std::to_string(rank) + " of " +
                   std::to_string(size) + ", this is rank " +
                   std::to_string(ctx.rank) + " of " +
                   std::to_string(ctx.size));

  std::map<std::string, SavedState> restored;
  for (uint64_t i = 0; i < numStates; ++i) {
    uint32_t nameLength = 0;
    if (!reader.get(nameLength) || nameLength > body)
      return corrupt("truncated state name");
    std::string name(nameLength, '\0');
    SavedState state;
    uint64_t count = 0;
    if (!reader.bytes(name.data(), nameLength) || !reader.get(state.step) ||
        !reader.get(count) || count > body / sizeof(float))
      return corrupt("truncated state '" + name + "'");
    state.count = static_cast<int64_t>(count);
    state.memory.resize(count);
    if (!reader.bytes(state.memory.data(), sizeof(float) * count))
      return corrupt("truncated memory of state '" + name + "'");
    if (restored.count(name) != 0)
      return corrupt("state '" + name + "' appears twice");
    auto live = ctx.states.find(name);
    if (live != ctx.states.end() && live->second.count != state.count)
      return corrupt("state '" + name + "' has " + std::to_string(state.count) +
                     " elements in the file, " +
                     std::to_string(live->second.count) + " live");
    restored.emplace(std::move(name), std::move(state));
  }
  if (!reader.done())
    return corrupt("trailing bytes after the last state");
  checkpoint.valid = true;
  checkpoint.generation = generation;
  checkpoint.states = std::move(restored);
  return GRADCOMM_OK;
}

/// The generation in the header of the checkpoint at `path` (version 1
/// files: 0), or -1 when there is none. Only the header is read: the new
/// generation only has to be larger than every one on disk.
int64_t generationOf(const std::string &path) {
  struct {
    char magic[sizeof(kMagic)];
    uint32_t version, rank, size;
    uint64_t generation;
  } __attribute__((packed)) header;
  std::ifstream file(path, std::ios::binary);
  if (!file.read(reinterpret_cast<char *>(&header), sizeof(header)) ||
      std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0)
    return -1;
  if (header.version == 1)
    return 0;
  return header.version == kVersion ? static_cast<int64_t>(header.generation)
                                    : -1;
}

/// The min or max of one int64 over the group, under the watchdog.
gradcomm_status reduceOne(const Call &call, int64_t &value,
                          Reduction reduction) {
  return allReduce(call, &value, 1, Element::Int64, reduction,
                   "all-reduce (checkpoint generation)");
}

} // namespace

gradcomm_status gradcomm_state_save(const char *path) {
  return guarded("state_save", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    // Job-wide, whichever group is active.
    WorldScope world;
    std::string target, previous, temporary;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(requireName(call, "path", path));
      target = rankPath(path);
      previous = target + ".prev";
      temporary = target + ".tmp";
      GRADCOMM_RETURN_IF_ERROR(requireRegularOrMissing(call, target));
      GRADCOMM_RETURN_IF_ERROR(requireRegularOrMissing(call, previous));
      GRADCOMM_RETURN_IF_ERROR(requireRegularOrMissing(call, temporary));
      return requireNoRequestInFlight(call, "saving a checkpoint");
    }));
    // Asynchronous EASGD centers live in rank 0's window: saved as they
    // are now.
    for (auto &[name, state] : context().states)
      if (extensions().refreshState)
        GRADCOMM_RETURN_IF_ERROR(extensions().refreshState(call, name, state));
    // Phase 1: every rank writes generation G next to its current file.
    int64_t generation = generationOf(target);
    GRADCOMM_RETURN_IF_ERROR(reduceOne(call, generation, Reduction::Max));
    generation = std::max<int64_t>(generation, 0) + 1;
    gradcomm_status written = writeCheckpoint(call, temporary, generation);
    gradcomm_status agreed = checkConsistency(call, {}, false, written);
    if (agreed != GRADCOMM_OK) {
      std::remove(temporary.c_str());
      return agreed;
    }
    // Phase 2: all wrote; the current file becomes the previous one and
    // the new one the current one.
    gradcomm_status moved = GRADCOMM_OK;
    if (::access(target.c_str(), F_OK) == 0 &&
        std::rename(target.c_str(), previous.c_str()) != 0)
      moved = call.fail(GRADCOMM_ERR_IO, "cannot rename '" + target + "' to '" +
                                             previous +
                                             "': " + std::strerror(errno));
    else if (std::rename(temporary.c_str(), target.c_str()) != 0)
      moved =
          call.fail(GRADCOMM_ERR_IO, "cannot rename '" + temporary + "' to '" +
                                         target + "': " + std::strerror(errno));
    syncDirectory(target);
    if (moved != GRADCOMM_OK)
      std::remove(temporary.c_str());
    GRADCOMM_RETURN_IF_ERROR(
        checkConsistency(call, {{"generation", generation}}, false, moved));
    context().generation = static_cast<uint64_t>(generation);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_state_restore(const char *path) {
  return guarded("state_restore", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    // Job-wide, whichever group is active.
    WorldScope world;
    Context &ctx = context();
    std::string target;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(requireName(call, "path", path));
      target = rankPath(path);
      return requireNoRequestInFlight(call, "restoring a checkpoint");
    }));
    // This rank's candidates: its current file, else its previous one.
    Checkpoint current, previous;
    gradcomm_status currentStatus = readCheckpoint(call, target, current);
    std::string currentError = gradcomm_last_error();
    readCheckpoint(call, target + ".prev", previous);
    call.adopt(currentStatus, currentError);
    // The newest generation every rank has: at most two rounds, since
    // every rank holds at most two generations.
    Checkpoint *chosen = nullptr;
    int64_t below = INT64_MAX;
    for (int round = 0; round < 3 && !chosen; ++round) {
      int64_t mine = -1;
      for (Checkpoint *candidate : {&current, &previous})
        if (candidate->valid &&
            static_cast<int64_t>(candidate->generation) < below)
          mine = std::max(mine, static_cast<int64_t>(candidate->generation));
      int64_t common = mine;
      GRADCOMM_RETURN_IF_ERROR(reduceOne(call, common, Reduction::Min));
      if (common < 0)
        break;
      Checkpoint *have = nullptr;
      for (Checkpoint *candidate : {&current, &previous})
        if (candidate->valid &&
            static_cast<int64_t>(candidate->generation) == common)
          have = candidate;
      int64_t everyone = have ? 1 : 0;
      GRADCOMM_RETURN_IF_ERROR(reduceOne(call, everyone, Reduction::Min));
      if (everyone == 1)
        chosen = have;
      below = common;
    }
    // No generation complete everywhere: every rank fails with the lowest
    // failing rank's reason (its current file's).
    gradcomm_status local =
        chosen ? GRADCOMM_OK
        : currentStatus != GRADCOMM_OK
            ? currentStatus
            : call.fail(GRADCOMM_ERR_IO, "no checkpoint generation is "
                                         "complete on every rank");
    GRADCOMM_RETURN_IF_ERROR(checkConsistency(call, {}, false, local));
    // Staged into fresh memory where the backend keeps tensors; on a
    // failure it is freed again and the live state stays.
    const Backend &selected = backend();
    std::map<std::string, State> restored;
    for (auto &[name, saved] : chosen->states) {
      State state;
      state.count = saved.count;
      state.step = saved.step;
      float *memory = nullptr;
      GRADCOMM_RETURN_IF_ERROR(selected.allocate(call, saved.count, &memory));
      state.memory = BackendMemory(&selected, memory);
      GRADCOMM_RETURN_IF_ERROR(selected.copyFromHost(
          call, memory, saved.memory.data(), sizeof(float) * saved.count));
      restored.emplace(name, std::move(state));
    }
    ctx.states = std::move(restored);
    ctx.generation = chosen->generation;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_state_generation(uint64_t *generation) {
  return guarded("state_generation", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "generation", generation));
    *generation = context().generation;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm::lookupState(const Call &call, const char *name,
                                      int64_t count, State *&state) {
  auto &states = context().states;
  auto it = states.find(name);
  if (it == states.end()) {
    State fresh;
    fresh.count = count;
    const Backend &selected = backend();
    float *memory = nullptr;
    GRADCOMM_RETURN_IF_ERROR(selected.allocate(call, count, &memory));
    fresh.memory = BackendMemory(&selected, memory);
    it = states.emplace(name, std::move(fresh)).first;
    call.createdStates.push_back(name);
  } else if (it->second.count != count) {
    return call.fail(GRADCOMM_ERR_STATE,
                     "state '" + std::string(name) + "' has " +
                         std::to_string(it->second.count) +
                         " elements, the call passes " + std::to_string(count));
  }
  state = &it->second;
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::lookupIdleState(const Call &call, const char *name,
                                          int64_t count, State *&state) {
  GRADCOMM_RETURN_IF_ERROR(lookupState(call, name, count, state));
  if (state->inFlight)
    return call.fail(GRADCOMM_ERR_STATE,
                     "state '" + std::string(name) +
                         "' has a started call not waited for yet");
  return GRADCOMM_OK;
}
