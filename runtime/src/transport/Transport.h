//===- Transport.h - What the runtime's ops need from a network --*- C++
//-*-===//
//
// Part of the GradComm project.
//
// The transport layer: how bytes move between the ranks of one group,
// beside (not above) the compute backends. Every op (dense, ScaleCom, local
// top-k, gossip, elastic averaging, the reduce-scatters, the agreement,
// checkpoints, counters) reaches other ranks only through this interface:
// started collectives and point-to-point transfers, completed by polling
// `test` (the runtime's watchdog polls, so a dead peer is reported and
// never waited on forever).
// MPI is one transport (MpiTransport.h); the unit tests run every op over
// another (runtime/test/TransportDouble.h).
//
// This layer includes nothing of the runtime above it: errors come back as
// the transport's own codes, which the runtime turns into messages through
// `describe` (Call::transport).
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_TRANSPORT_H
#define GRADCOMM_RUNTIME_TRANSPORT_H

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradcomm {

/// What a transfer carries. Bfloat16 and Float16 reduce as the sum of the
/// values widened to float32 and rounded back once per pairwise combine.
enum class Element { Byte, Int32, Int64, Float32, Float64, Bfloat16, Float16 };

/// The combine of an all-reduce.
enum class Reduction { Sum, Max, Min };

/// Bytes of one element.
inline int64_t elementBytes(Element element) {
  switch (element) {
  case Element::Byte:
    return 1;
  case Element::Bfloat16:
  case Element::Float16:
    return 2;
  case Element::Int32:
  case Element::Float32:
    return 4;
  case Element::Int64:
  case Element::Float64:
    return 8;
  }
  return 1;
}

/// The most elements one call carries (callers split larger buffers).
inline constexpr int64_t kTransportMaxCount = INT_MAX;

/// A started transfer, as the transport that started it knows it; complete
/// it with Transport::test. Plain data, so a started call can hold many.
struct Transfer {
  uint64_t handle = 0;
  bool active = false;
};

/// What returned an error code, and what the code means: a transport and
/// the windows it opened (Call::transport turns a code into a message).
class ErrorSource {
public:
  virtual ~ErrorSource() = default;
  /// The transport's name for messages ("MPI").
  virtual const char *name() const = 0;
  /// The transport's words for an error code one of its calls returned.
  virtual std::string describe(int error) const = 0;
};

/// A region of bytes of which every rank of a group holds a part, read and
/// written by the other ranks without this rank taking part (one-sided,
/// passive target). Access to a rank's part goes between lock(rank) and
/// unlock(rank); what was started in between has completed at the unlock
/// or at flush(rank). Every call returns 0 or an error code for
/// `describe`. Made by Transport::openWindow (collective); destroying it
/// is collective too (every rank of the group destroys its window).
class Window : public ErrorSource {
public:
  /// This rank's part: bytes() bytes, zeroed when the window was opened.
  /// Read or written in place only under this rank's own lock, after
  /// syncLocal().
  char *local() const { return base; }
  int64_t bytes() const { return partBytes; }

  virtual int lock(int rank, bool exclusive) = 0;
  virtual int unlock(int rank) = 0;
  /// Completes at `rank` what this rank started there since its lock.
  virtual int flush(int rank) = 0;
  /// Makes local() show what the other ranks wrote into this rank's part.
  virtual int syncLocal() = 0;

  /// `bytes` bytes from `data` into `rank`'s part at `offset`.
  virtual int put(const void *data, int64_t bytes, int rank,
                  int64_t offset) = 0;
  /// `count` int32s from `data` into `rank`'s part at `offset`, each
  /// written atomically (a reader sees the old or the new value).
  virtual int storeAtomic(const int32_t *data, int count, int rank,
                          int64_t offset) = 0;
  /// `count` floats at `offset` of `rank`'s part, each read atomically
  /// against accumulateSum, into `data` (complete at flush or unlock).
  virtual int readAtomic(float *data, int64_t count, int rank,
                         int64_t offset) = 0;
  /// Adds `count` floats from `data`, each atomically, to those at
  /// `offset` of `rank`'s part.
  virtual int accumulateSum(const float *data, int64_t count, int rank,
                            int64_t offset) = 0;

protected:
  Window(char *base, int64_t bytes) : base(base), partBytes(bytes) {}

private:
  char *base;
  int64_t partBytes;
};

/// The ranks of one group and how to reach them. Collective calls must be
/// started in the same order on every rank of the group; transfers between
/// two ranks are matched in the order they were started.
class Transport : public ErrorSource {
public:
  int rank() const { return rankInGroup; }
  int size() const { return groupSize; }

  // Every call below returns 0 or an error code for `describe`, and starts
  // (never completes) the transfer; `test` completes it.

  /// `count` elements at `data` reduced in place over the group.
  virtual int startAllReduce(void *data, int64_t count, Element element,
                             Reduction reduction, Transfer &transfer) = 0;
  /// `count` elements at `data` from `root` to every rank.
  virtual int startBroadcast(void *data, int64_t count, Element element,
                             int root, Transfer &transfer) = 0;
  /// `receive` gets size() blocks of `count` elements, rank r's `send` at
  /// block r.
  virtual int startAllGather(const void *send, int64_t count, Element element,
                             void *receive, Transfer &transfer) = 0;
  /// Rank r receives in `receive` the reduction over the group of block r
  /// of `send`: `counts[r]` elements, the blocks laid out in rank order in
  /// every rank's `send` (size() counts, the same on every rank).
  virtual int startReduceScatter(const void *send, void *receive,
                                 const int64_t *counts, Element element,
                                 Reduction reduction, Transfer &transfer) = 0;
  virtual int startSend(const void *data, int64_t count, Element element,
                        int peer, Transfer &transfer) = 0;
  virtual int startReceive(void *data, int64_t count, Element element, int peer,
                           Transfer &transfer) = 0;
  /// `*done` = true once `transfer` completed (it is then inactive). Also
  /// moves the transport's other transfers on.
  virtual int test(Transfer &transfer, bool *done) = 0;

  /// A transport over the ranks that pass the same `color`, ordered by
  /// `key` (collective over this group).
  virtual int split(int color, int key, std::unique_ptr<Transport> *part) = 0;
  /// A transport over the ranks of this group on this rank's node
  /// (collective): the runtime maps nodes with it.
  virtual int splitByNode(std::unique_ptr<Transport> *node) = 0;
  /// Ends every rank's process with `code` (the runtime's fatal path: a
  /// watchdog that fired, a corrupted job).
  [[noreturn]] virtual void abortJob(int code) = 0;

  // One-sided windows: a capability some transports have.

  /// Whether openWindow can make windows (the asynchronous ops refuse to
  /// run where it cannot, before they agree on anything).
  virtual bool hasWindows() const { return false; }
  /// A window with a part of `bytes` bytes on every rank of the group
  /// (collective; the parts may differ in size). A transport without
  /// windows returns 0 and no window.
  virtual int openWindow(int64_t bytes, std::unique_ptr<Window> *window);
  /// Passive-target operations may complete only when the target rank's
  /// transport moves on, which a rank busy computing does not do: whether
  /// this transport's windows need a thread for that.
  virtual bool windowsNeedProgress() const { return false; }
  /// Starts that thread, which moves the transport on until
  /// stopWindowProgress (one at a time). `*unavailable`: empty, or why
  /// this transport cannot have one here (the windows still work, but wait
  /// for the target's next call into the transport).
  virtual int startWindowProgress(std::string *unavailable) {
    unavailable->clear();
    return 0;
  }
  virtual void stopWindowProgress() {}

protected:
  Transport(int rank, int size) : rankInGroup(rank), groupSize(size) {}

private:
  int rankInGroup;
  int groupSize;
};

inline int Transport::openWindow(int64_t, std::unique_ptr<Window> *window) {
  window->reset();
  return 0;
}

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_TRANSPORT_H
