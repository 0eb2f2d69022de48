//===- PmiServer.cpp - MPICH's process-manager interface over a rendezvous ===//
//
// Part of the GradComm project.
//
// The commands are those of MPICH's simple PMI-1 client (what it sends at
// MPI_Init, MPI_Finalize and MPI_Abort). Keys live in the rendezvous under
// "gradcomm/pmi/": kvs/<key> for MPI's own, host/<rank> for the node map,
// barrier/<n>/<rank> for barriers. A barrier is every rank setting its key
// and reading everyone's, which needs nothing of a rendezvous but set and
// a blocking get.
//
//===----------------------------------------------------------------------===//

#include "PmiServer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace gradcomm;

namespace {

/// PMI-1's limits as Hydra announces them; MPICH splits longer values.
constexpr int kKvsNameMax = 256;
constexpr int kKeyMax = 64;
constexpr int kValueMax = 1024;
/// The longest line either side writes (a put of a full value).
constexpr size_t kLineMax = 2048;
constexpr const char *kKvsName = "gradcomm_kvs";

std::mutex errorMutex;
std::string firstError;

void recordError(int rank, int size, const std::string &cause) {
  std::string message = "gradcomm: init_with_rendezvous on rank " +
                        std::to_string(rank) + " of " + std::to_string(size) +
                        ": " + cause;
  std::fprintf(stderr, "%s\n", message.c_str());
  std::lock_guard<std::mutex> lock(errorMutex);
  if (firstError.empty())
    firstError = message;
}

class PmiServer {
public:
  PmiServer(int rank, int size, const gradcomm_rendezvous &rendezvous,
            int socket)
      : rank(rank), size(size), rendezvous(rendezvous), socket(socket) {}

  void serve() {
    std::string line;
    while (readLine(line)) {
      if (!answer(line))
        break;
    }
    close(socket);
  }

  bool set(const std::string &key, const std::string &value) {
    std::string full = "gradcomm/pmi/" + key;
    if (rendezvous.set(rendezvous.user, full.c_str(), value.c_str()) == 0)
      return true;
    recordError(rank, size, "the rendezvous could not set '" + full + "'");
    return false;
  }

  bool get(const std::string &key, std::string &value) {
    std::string full = "gradcomm/pmi/" + key;
    std::vector<char> buffer(kLineMax, '\0');
    if (rendezvous.get(rendezvous.user, full.c_str(), buffer.data(),
                       buffer.size()) != 0) {
      recordError(rank, size,
                  "the rendezvous gave no value for '" + full +
                      "' (a rank did not start, or the rendezvous timed out)");
      return false;
    }
    buffer.back() = '\0';
    value = buffer.data();
    return true;
  }

private:
  bool readLine(std::string &line) {
    line.clear();
    char c = 0;
    while (true) {
      ssize_t got = read(socket, &c, 1);
      if (got <= 0)
        return false; // MPI closed its end (finalized, or the process ends)
      if (c == '\n')
        return true;
      if (line.size() >= kLineMax)
        return false;
      line.push_back(c);
    }
  }

  bool reply(const std::string &text) {
    size_t written = 0;
    while (written < text.size()) {
      ssize_t n = write(socket, text.data() + written, text.size() - written);
      if (n <= 0)
        return false;
      written += static_cast<size_t>(n);
    }
    return true;
  }

  /// The value of `name=` in a command line (up to the next space; the
  /// rest of the line for `value`, which is last and may hold anything).
  static std::string field(const std::string &line, const std::string &name) {
    std::string token = name + "=";
    size_t at = line.find(token);
    while (at != std::string::npos && at != 0 && line[at - 1] != ' ')
      at = line.find(token, at + 1);
    if (at == std::string::npos)
      return "";
    at += token.size();
    if (name == "value")
      return line.substr(at);
    return line.substr(at, line.find(' ', at) - at);
  }

  bool barrier() {
    std::string prefix = "barrier/" + std::to_string(barriers++) + "/";
    if (!set(prefix + std::to_string(rank), "1"))
      return false;
    std::string ignored;
    for (int other = 0; other < size; ++other)
      if (!get(prefix + std::to_string(other), ignored))
        return false;
    return true;
  }

  /// Hydra's PMI_process_mapping: "(vector,(node,nodes,ranks per node),...)"
  /// in rank order, from the host each rank published when it started.
  bool processMapping(std::string &mapping) {
    std::map<std::string, int> nodeOf;
    std::vector<int> nodes;
    for (int other = 0; other < size; ++other) {
      std::string host;
      if (!get("host/" + std::to_string(other), host))
        return false;
      nodes.push_back(nodeOf.emplace(host, nodeOf.size()).first->second);
    }
    // Runs of consecutive ranks on one node, merged into blocks of
    // consecutive nodes holding runs of the same length.
    struct Block {
      int node, count, ranks;
    };
    std::vector<Block> blocks;
    for (int r = 0; r < size;) {
      int length = 1;
      while (r + length < size && nodes[r + length] == nodes[r])
        ++length;
      if (!blocks.empty() && blocks.back().ranks == length &&
          blocks.back().node + blocks.back().count == nodes[r])
        ++blocks.back().count;
      else
        blocks.push_back({nodes[r], 1, length});
      r += length;
    }
    mapping = "(vector";
    for (const Block &block : blocks)
      mapping += ",(" + std::to_string(block.node) + "," +
                 std::to_string(block.count) + "," +
                 std::to_string(block.ranks) + ")";
    mapping += ")";
    return true;
  }

  /// Answers one command; false ends the server.
  bool answer(const std::string &line) {
    std::string cmd = field(line, "cmd");
    if (cmd == "init")
      return reply("cmd=response_to_init pmi_version=1 pmi_subversion=1 "
                   "rc=0\n");
    if (cmd == "get_maxes")
      return reply("cmd=maxes rc=0 kvsname_max=" + std::to_string(kKvsNameMax) +
                   " keylen_max=" + std::to_string(kKeyMax) +
                   " vallen_max=" + std::to_string(kValueMax) + "\n");
    if (cmd == "get_appnum")
      return reply("cmd=appnum rc=0 appnum=0\n");
    if (cmd == "get_my_kvsname")
      return reply(std::string("cmd=my_kvsname rc=0 kvsname=") + kKvsName +
                   "\n");
    if (cmd == "get_universe_size")
      return reply("cmd=universe_size rc=0 size=" + std::to_string(size) +
                   "\n");
    if (cmd == "put") {
      bool stored = set("kvs/" + field(line, "key"), field(line, "value"));
      return reply(stored ? "cmd=put_result rc=0\n"
                          : "cmd=put_result rc=-1 msg=rendezvous_set_failed\n");
    }
    if (cmd == "barrier_in")
      return barrier() && reply("cmd=barrier_out rc=0\n");
    if (cmd == "get") {
      std::string key = field(line, "key"), value;
      bool found;
      if (key == "PMI_process_mapping")
        found = processMapping(value);
      else if (key.rfind("PMI_", 0) == 0)
        // What else Hydra itself would know (a topology file): nothing.
        return reply("cmd=get_result rc=-1 msg=key_not_found\n");
      else
        found = get("kvs/" + key, value);
      return reply(found ? "cmd=get_result rc=0 value=" + value + "\n"
                         : "cmd=get_result rc=-1 msg=rendezvous_get_failed\n");
    }
    if (cmd == "finalize") {
      reply("cmd=finalize_ack rc=0\n");
      return false;
    }
    if (cmd == "abort")
      return false; // the process exits by itself
    recordError(rank, size,
                "MPI asked the rendezvous for '" + line +
                    "', which it does not serve (a job started without "
                    "mpiexec cannot spawn processes or publish names)");
    return false; // closing the socket fails MPI's call instead of hanging
  }

  int rank, size;
  gradcomm_rendezvous rendezvous;
  int socket;
  int barriers = 0;
};

} // namespace

bool gradcomm::startPmiServer(int rank, int size,
                              const gradcomm_rendezvous &rendezvous,
                              std::string &error) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
    error = std::string("socketpair failed: ") + std::strerror(errno);
    return false;
  }
  auto server = std::make_shared<PmiServer>(rank, size, rendezvous, sockets[0]);
  // GRADCOMM_NODE_NAME stands in for the host name where hosts share one
  // (containers, or network namespaces emulating nodes).
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const char *node = std::getenv("GRADCOMM_NODE_NAME");
  if (!server->set("host/" + std::to_string(rank),
                   node && *node ? node : host)) {
    close(sockets[0]);
    close(sockets[1]);
    error = pmiServerError();
    return false;
  }
  setenv("PMI_FD", std::to_string(sockets[1]).c_str(), 1);
  setenv("PMI_RANK", std::to_string(rank).c_str(), 1);
  setenv("PMI_SIZE", std::to_string(size).c_str(), 1);
  // Detached: it ends when MPI closes its socket at MPI_Finalize; a
  // process that exits without finalizing takes it along.
  std::thread([server] { server->serve(); }).detach();
  return true;
}

void gradcomm::clearPmiEnvironment() {
  unsetenv("PMI_FD");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
}

std::string gradcomm::pmiServerError() {
  std::lock_guard<std::mutex> lock(errorMutex);
  return firstError;
}
