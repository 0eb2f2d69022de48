//===- TransportDouble.h - A transport over shared memory, for tests --*- C++
//-*-===//
//
// Part of the GradComm project.
//
// A second implementation of Transport.h, with no MPI under it: ranks are
// processes forked from one parent, and every transfer goes through one
// shared-memory region mapped before the fork. Collectives run when they
// start (each rank writes its block, a barrier, each rank combines the
// blocks in rank order, a barrier); sends and receives go through one
// mailbox per ordered pair of ranks and complete as `test` moves them on,
// in the order they were started. Windows are parts of the region too,
// locked with atomics in it (made with `windows` false, it has none, so the
// runtime's refusal can be tested). It has no groups, so the runtime's
// refusal of those is tested too. Every wait gives up after a few seconds
// with an error instead of hanging.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TEST_TRANSPORTDOUBLE_H
#define GRADCOMM_RUNTIME_TEST_TRANSPORTDOUBLE_H

#include "Transport.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gradcomm::test {

/// The memory the ranks share: map it in the parent, then fork.
class SharedRegion {
public:
  /// For `size` ranks (at most kMaxRanks).
  explicit SharedRegion(int size);
  ~SharedRegion();
  SharedRegion(const SharedRegion &) = delete;
  SharedRegion &operator=(const SharedRegion &) = delete;

  static constexpr int kMaxRanks = 8;
  /// What one rank may put into one collective, and one message.
  static constexpr int64_t kBlockBytes = int64_t(4) << 20;
  static constexpr int64_t kMessageBytes = int64_t(1) << 20;
  /// Every window's part on one rank, together; and how many windows.
  static constexpr int64_t kWindowBytes = int64_t(1) << 20;
  static constexpr int kMaxWindows = 8;

  struct Mailbox {
    std::atomic<uint32_t> full{0};
    int64_t bytes = 0;
  };
  struct Header {
    std::atomic<uint64_t> arrived{0};
    std::atomic<uint64_t> generation{0};
    Mailbox mailboxes[kMaxRanks][kMaxRanks];
    /// Each window's lock on each rank's part: 0 free, -1 held
    /// exclusively, n > 0 held shared n times.
    std::atomic<int32_t> locks[kMaxWindows][kMaxRanks] = {};
  };

  int size() const { return ranks; }
  Header &header() const { return *static_cast<Header *>(base); }
  char *block(int rank) const;
  char *message(int from, int to) const;
  /// Where `rank`'s parts of the windows are.
  char *windows(int rank) const;

private:
  int ranks;
  size_t bytes;
  void *base;
};

class TransportDouble final : public Transport {
public:
  TransportDouble(SharedRegion &region, int rank, bool windows = true);

  const char *name() const override { return "transport double"; }
  std::string describe(int error) const override;

  int startAllReduce(void *data, int64_t count, Element element,
                     Reduction reduction, Transfer &transfer) override;
  int startBroadcast(void *data, int64_t count, Element element, int root,
                     Transfer &transfer) override;
  int startAllGather(const void *send, int64_t count, Element element,
                     void *receive, Transfer &transfer) override;
  int startReduceScatter(const void *send, void *receive, const int64_t *counts,
                         Element element, Reduction reduction,
                         Transfer &transfer) override;
  int startSend(const void *data, int64_t count, Element element, int peer,
                Transfer &transfer) override;
  int startReceive(void *data, int64_t count, Element element, int peer,
                   Transfer &transfer) override;
  int test(Transfer &transfer, bool *done) override;

  int split(int color, int key, std::unique_ptr<Transport> *part) override;
  int splitByNode(std::unique_ptr<Transport> *node) override;
  [[noreturn]] void abortJob(int code) override;

  bool hasWindows() const override { return windows; }
  int openWindow(int64_t bytes, std::unique_ptr<Window> *window) override;

  /// Calls made, by kind ("all-reduce", "send", ...): the test checks
  /// that every op went through this transport.
  const std::map<std::string, int64_t> &calls() const { return made; }

private:
  struct Pending {
    bool send;
    int peer;
    char *data;
    int64_t bytes;
    bool done = false;
    int error = 0;
  };

  /// Every rank arrives before any leaves; moves sends and receives on
  /// while it waits.
  int barrier();
  /// Moves every peer's first pending send and receive on, as far as the
  /// mailboxes allow.
  int progress();
  int post(bool send, const void *data, int64_t bytes, int peer,
           Transfer &transfer);

  SharedRegion &region;
  bool windows;
  /// Windows opened so far, and the bytes of each rank's window area they
  /// take (the same on every rank: opening is collective).
  int windowsOpened = 0;
  int64_t windowBytesUsed = 0;
  uint64_t nextId = 1;
  std::map<uint64_t, Pending> pending;
  std::map<std::string, int64_t> made;
};

} // namespace gradcomm::test

#endif // GRADCOMM_RUNTIME_TEST_TRANSPORTDOUBLE_H
