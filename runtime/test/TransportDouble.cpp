//===- TransportDouble.cpp - A transport over shared memory, for tests ----===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "TransportDouble.h"
#include "HalfFloat.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>

using namespace gradcomm;
using namespace gradcomm::test;

namespace {

enum DoubleError {
  kTooLarge = 1,
  kPeerMissing,
  kSizeMismatch,
  kNoGroups,
  kBadRoot,
  kNoWindowRoom,
  kLockNotReleased,
  kNotLocked,
};

/// Long enough for a loaded 2-core machine, short enough that a test that
/// went wrong ends quickly.
constexpr double kWaitSeconds = 20.0;

/// The words for the double's error codes, its windows' included.
std::string describeError(int error) {
  switch (error) {
  case kTooLarge:
    return "more than the double's block or message size";
  case kPeerMissing:
    return "a peer did not come within " + std::to_string(kWaitSeconds) + " s";
  case kSizeMismatch:
    return "a message of another size than the receive";
  case kNoGroups:
    return "the transport double has no groups";
  case kBadRoot:
    return "no such root";
  case kNoWindowRoom:
    return "more windows or window bytes than the double has room for";
  case kLockNotReleased:
    return "a window lock was not released within " +
           std::to_string(kWaitSeconds) + " s";
  case kNotLocked:
    return "an unlock without a lock";
  }
  return "unknown error " + std::to_string(error);
}

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

size_t headerBytes() {
  return (sizeof(SharedRegion::Header) + 4095) / 4096 * 4096;
}

template <typename T>
void combine(T *into, const T *from, int64_t count, Reduction reduction) {
  for (int64_t i = 0; i < count; ++i)
    into[i] = reduction == Reduction::Sum   ? into[i] + from[i]
              : reduction == Reduction::Max ? std::max(into[i], from[i])
                                            : std::min(into[i], from[i]);
}

/// into = narrow(widen(into) + widen(from)): one rounding per combine, as
/// the MPI transport's user operation.
void combineSixteenBits(uint16_t *into, const uint16_t *from, int64_t count,
                        bool bfloat16) {
  for (int64_t i = 0; i < count; ++i) {
    if (bfloat16)
      into[i] = half::toBfloat16(half::fromBfloat16(into[i]) +
                                 half::fromBfloat16(from[i]));
    else
      into[i] = half::toHalf(half::fromHalf(into[i]) + half::fromHalf(from[i]));
  }
}

void finished(Transfer &transfer) {
  transfer.handle = 0;
  transfer.active = false;
}

} // namespace

SharedRegion::SharedRegion(int size) : ranks(size) {
  if (size < 1 || size > kMaxRanks)
    throw std::invalid_argument("the transport double takes 1-8 ranks");
  bytes = headerBytes() + size * kBlockBytes + size * size * kMessageBytes +
          size * kWindowBytes;
  base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    throw std::bad_alloc();
  new (base) Header();
}

SharedRegion::~SharedRegion() { munmap(base, bytes); }

char *SharedRegion::block(int rank) const {
  return static_cast<char *>(base) + headerBytes() + rank * kBlockBytes;
}

char *SharedRegion::message(int from, int to) const {
  return static_cast<char *>(base) + headerBytes() + ranks * kBlockBytes +
         (from * ranks + to) * kMessageBytes;
}

char *SharedRegion::windows(int rank) const {
  return message(0, 0) + ranks * ranks * kMessageBytes + rank * kWindowBytes;
}

TransportDouble::TransportDouble(SharedRegion &region, int rank, bool windows)
    : Transport(rank, region.size()), region(region), windows(windows) {}

std::string TransportDouble::describe(int error) const {
  return describeError(error);
}

int TransportDouble::barrier() {
  SharedRegion::Header &header = region.header();
  const uint64_t generation = header.generation.load(std::memory_order_acquire);
  if (header.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint64_t>(size())) {
    header.arrived.store(0, std::memory_order_relaxed);
    header.generation.fetch_add(1, std::memory_order_acq_rel);
    return 0;
  }
  const double start = seconds();
  while (header.generation.load(std::memory_order_acquire) == generation) {
    if (int error = progress())
      return error;
    sched_yield();
    if (seconds() - start > kWaitSeconds)
      return kPeerMissing;
  }
  return 0;
}

/// result = the reduction in rank order of `count` elements at `offset`
/// bytes into every rank's block.
static void combineBlocks(const SharedRegion &region, int64_t offset,
                          int64_t count, Element element, Reduction reduction,
                          std::vector<char> &result) {
  const int64_t bytes = count * elementBytes(element);
  result.assign(region.block(0) + offset, region.block(0) + offset + bytes);
  for (int r = 1; r < region.size(); ++r) {
    const char *from = region.block(r) + offset;
    switch (element) {
    case Element::Float32:
      combine(reinterpret_cast<float *>(result.data()),
              reinterpret_cast<const float *>(from), count, reduction);
      break;
    case Element::Float64:
      combine(reinterpret_cast<double *>(result.data()),
              reinterpret_cast<const double *>(from), count, reduction);
      break;
    case Element::Int32:
      combine(reinterpret_cast<int32_t *>(result.data()),
              reinterpret_cast<const int32_t *>(from), count, reduction);
      break;
    case Element::Int64:
      combine(reinterpret_cast<int64_t *>(result.data()),
              reinterpret_cast<const int64_t *>(from), count, reduction);
      break;
    case Element::Byte:
      combine(reinterpret_cast<uint8_t *>(result.data()),
              reinterpret_cast<const uint8_t *>(from), count, reduction);
      break;
    case Element::Bfloat16:
    case Element::Float16:
      combineSixteenBits(reinterpret_cast<uint16_t *>(result.data()),
                         reinterpret_cast<const uint16_t *>(from), count,
                         element == Element::Bfloat16);
      break;
    }
  }
}

int TransportDouble::startAllReduce(void *data, int64_t count, Element element,
                                    Reduction reduction, Transfer &transfer) {
  made["all-reduce"] += 1;
  const int64_t bytes = count * elementBytes(element);
  if (bytes > SharedRegion::kBlockBytes)
    return kTooLarge;
  std::memcpy(region.block(rank()), data, bytes);
  if (int error = barrier())
    return error;
  // Every rank combines the blocks in rank order: the same bits everywhere.
  std::vector<char> result;
  combineBlocks(region, 0, count, element, reduction, result);
  if (int error = barrier())
    return error;
  std::memcpy(data, result.data(), bytes);
  finished(transfer);
  return 0;
}

int TransportDouble::startReduceScatter(const void *send, void *receive,
                                        const int64_t *counts, Element element,
                                        Reduction reduction,
                                        Transfer &transfer) {
  made["reduce-scatter"] += 1;
  int64_t total = 0, offset = 0;
  for (int r = 0; r < size(); ++r) {
    if (r < rank())
      offset += counts[r];
    total += counts[r];
  }
  const int64_t bytes = total * elementBytes(element);
  if (bytes > SharedRegion::kBlockBytes)
    return kTooLarge;
  std::memcpy(region.block(rank()), send, bytes);
  if (int error = barrier())
    return error;
  std::vector<char> result;
  combineBlocks(region, offset * elementBytes(element), counts[rank()], element,
                reduction, result);
  if (int error = barrier())
    return error;
  std::memcpy(receive, result.data(), result.size());
  finished(transfer);
  return 0;
}

int TransportDouble::startBroadcast(void *data, int64_t count, Element element,
                                    int root, Transfer &transfer) {
  made["broadcast"] += 1;
  const int64_t bytes = count * elementBytes(element);
  if (bytes > SharedRegion::kBlockBytes)
    return kTooLarge;
  if (root < 0 || root >= size())
    return kBadRoot;
  if (rank() == root)
    std::memcpy(region.block(root), data, bytes);
  if (int error = barrier())
    return error;
  if (rank() != root)
    std::memcpy(data, region.block(root), bytes);
  if (int error = barrier())
    return error;
  finished(transfer);
  return 0;
}

int TransportDouble::startAllGather(const void *send, int64_t count,
                                    Element element, void *receive,
                                    Transfer &transfer) {
  made["all-gather"] += 1;
  const int64_t bytes = count * elementBytes(element);
  if (bytes > SharedRegion::kBlockBytes)
    return kTooLarge;
  std::memcpy(region.block(rank()), send, bytes);
  if (int error = barrier())
    return error;
  for (int r = 0; r < size(); ++r)
    std::memcpy(static_cast<char *>(receive) + r * bytes, region.block(r),
                bytes);
  if (int error = barrier())
    return error;
  finished(transfer);
  return 0;
}

int TransportDouble::post(bool send, const void *data, int64_t bytes, int peer,
                          Transfer &transfer) {
  made[send ? "send" : "receive"] += 1;
  if (bytes > SharedRegion::kMessageBytes)
    return kTooLarge;
  const uint64_t id = nextId++;
  pending[id] = Pending{
      send, peer, const_cast<char *>(static_cast<const char *>(data)), bytes};
  transfer.handle = id;
  transfer.active = true;
  return progress();
}

int TransportDouble::startSend(const void *data, int64_t count, Element element,
                               int peer, Transfer &transfer) {
  return post(true, data, count * elementBytes(element), peer, transfer);
}

int TransportDouble::startReceive(void *data, int64_t count, Element element,
                                  int peer, Transfer &transfer) {
  return post(false, data, count * elementBytes(element), peer, transfer);
}

int TransportDouble::progress() {
  // Only the first unfinished send to a peer (and receive from it) may
  // move: transfers between two ranks match in the order they started.
  std::set<int> sendBlocked, receiveBlocked;
  for (auto &[id, transfer] : pending) {
    if (transfer.done)
      continue;
    std::set<int> &blocked = transfer.send ? sendBlocked : receiveBlocked;
    if (!blocked.insert(transfer.peer).second)
      continue;
    SharedRegion::Mailbox &box =
        transfer.send ? region.header().mailboxes[rank()][transfer.peer]
                      : region.header().mailboxes[transfer.peer][rank()];
    char *payload = transfer.send ? region.message(rank(), transfer.peer)
                                  : region.message(transfer.peer, rank());
    const uint32_t full = box.full.load(std::memory_order_acquire);
    if (transfer.send && full == 0) {
      std::memcpy(payload, transfer.data, transfer.bytes);
      box.bytes = transfer.bytes;
      box.full.store(1, std::memory_order_release);
      transfer.done = true;
    } else if (!transfer.send && full == 1) {
      if (box.bytes != transfer.bytes)
        return kSizeMismatch;
      std::memcpy(transfer.data, payload, transfer.bytes);
      box.full.store(0, std::memory_order_release);
      transfer.done = true;
    }
  }
  return 0;
}

int TransportDouble::test(Transfer &transfer, bool *done) {
  *done = !transfer.active;
  if (*done)
    return 0;
  if (int error = progress())
    return error;
  auto it = pending.find(transfer.handle);
  if (it == pending.end() || it->second.done) {
    if (it != pending.end())
      pending.erase(it);
    finished(transfer);
    *done = true;
  }
  return 0;
}

int TransportDouble::split(int, int, std::unique_ptr<Transport> *) {
  return kNoGroups;
}

int TransportDouble::splitByNode(std::unique_ptr<Transport> *node) {
  // One machine: the node is the whole group (the region sequences its
  // collectives whichever instance starts them).
  *node = std::make_unique<TransportDouble>(region, rank());
  return 0;
}

void TransportDouble::abortJob(int code) { _exit(code); }

namespace {

/// A window of the double: rank r's part is at `offset` in r's window area
/// of the region; the lock words are the region's. Puts are copies into
/// the shared memory, complete when they return; the atomic operations are
/// the compiler's atomics on the shared words (lock-free for 4 bytes).
class DoubleWindow final : public Window {
public:
  DoubleWindow(SharedRegion &region, int index, int64_t offset, int rank,
               int64_t bytes)
      : Window(region.windows(rank) + offset, bytes), region(region),
        index(index), offset(offset) {}

  const char *name() const override { return "transport double"; }
  std::string describe(int error) const override {
    return describeError(error);
  }

  int lock(int rank, bool exclusive) override {
    std::atomic<int32_t> &word = region.header().locks[index][rank];
    const double start = seconds();
    for (;;) {
      int32_t now = word.load(std::memory_order_relaxed);
      const bool free = exclusive ? now == 0 : now >= 0;
      if (free && word.compare_exchange_weak(now, exclusive ? -1 : now + 1,
                                             std::memory_order_acquire))
        return 0;
      if (seconds() - start > kWaitSeconds)
        return kLockNotReleased;
      sched_yield();
    }
  }
  int unlock(int rank) override {
    std::atomic<int32_t> &word = region.header().locks[index][rank];
    int32_t now = word.load(std::memory_order_relaxed);
    for (;;) {
      if (now == 0)
        return kNotLocked;
      if (word.compare_exchange_weak(now, now == -1 ? 0 : now - 1,
                                     std::memory_order_release))
        return 0;
    }
  }
  int flush(int) override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return 0;
  }
  int syncLocal() override {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return 0;
  }

  int put(const void *data, int64_t bytes, int rank, int64_t at) override {
    std::memcpy(part(rank) + at, data, static_cast<size_t>(bytes));
    return 0;
  }
  int storeAtomic(const int32_t *data, int count, int rank,
                  int64_t at) override {
    auto *words = reinterpret_cast<int32_t *>(part(rank) + at);
    for (int i = 0; i < count; ++i)
      __atomic_store_n(&words[i], data[i], __ATOMIC_SEQ_CST);
    return 0;
  }
  int readAtomic(float *data, int64_t count, int rank, int64_t at) override {
    auto *words = reinterpret_cast<uint32_t *>(part(rank) + at);
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t bits = __atomic_load_n(&words[i], __ATOMIC_SEQ_CST);
      std::memcpy(&data[i], &bits, sizeof(bits));
    }
    return 0;
  }
  int accumulateSum(const float *data, int64_t count, int rank,
                    int64_t at) override {
    auto *words = reinterpret_cast<uint32_t *>(part(rank) + at);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t old = __atomic_load_n(&words[i], __ATOMIC_RELAXED), sum;
      do {
        float value;
        std::memcpy(&value, &old, sizeof(old));
        value += data[i];
        std::memcpy(&sum, &value, sizeof(sum));
      } while (!__atomic_compare_exchange_n(
          &words[i], &old, sum, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    }
    return 0;
  }

private:
  char *part(int rank) const { return region.windows(rank) + offset; }

  SharedRegion &region;
  int index;
  int64_t offset;
};

} // namespace

int TransportDouble::openWindow(int64_t bytes,
                                std::unique_ptr<Window> *window) {
  made["window"] += 1;
  window->reset();
  if (!windows)
    return 0;
  // Every rank's part starts at the same offset of its area: the largest
  // part of any rank, 8-byte aligned, is reserved on each.
  int64_t largest = bytes;
  Transfer transfer;
  if (int error =
          startAllReduce(&largest, 1, Element::Int64, Reduction::Max, transfer))
    return error;
  largest = (largest + 7) / 8 * 8;
  if (windowsOpened == SharedRegion::kMaxWindows ||
      windowBytesUsed + largest > SharedRegion::kWindowBytes)
    return kNoWindowRoom;
  std::memset(region.windows(rank()) + windowBytesUsed, 0,
              static_cast<size_t>(largest));
  *window = std::make_unique<DoubleWindow>(region, windowsOpened,
                                           windowBytesUsed, rank(), bytes);
  windowsOpened += 1;
  windowBytesUsed += largest;
  // No rank writes into a part before its owner zeroed it.
  return barrier();
}
