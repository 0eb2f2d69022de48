//===- AsynchronousExchange.cpp - Asynchronous gossip and EASGD (RMA) ---===//
//
// Part of the GradComm project.
//
// docs/gossip.md. Each asynchronous state owns one one-sided window of the
// transport (Transport.h, Window), created by the state's first
// (collective) call; a transport without windows is refused. Every rank's part
// starts with a failure record, so a rank that fails later can tell every other
// rank without a collective. Gossip adds a mailbox; asynchronous EASGD keeps
// the center in rank 0's part, or sharded: elements [r c / n, (r + 1) c / n) of
// it in rank r's part, so no rank serves every worker's traffic.
//
// Window locks are held only around one put, one read or one
// read-modify-write, and never two at a time, so no rank can wait on a
// cycle of locks.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Kernels.h"
#include "Schedule.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

/// Number of staleness bins of the asynchronous gossip's histogram.
inline constexpr int kStalenessBins = 8;

/// One asynchronous op's one-sided window and what this rank remembers of
/// it.
struct AsyncWindow {
  /// The transport's window; this rank's part is window->local().
  std::unique_ptr<Window> window;
  /// Asynchronous EASGD: the windows hold the center, on rank 0 alone or
  /// one contiguous shard per rank (centerPart in AsynchronousExchange.cpp).
  bool center = false;
  bool sharded = false;
  /// The group the window was made in (nullptr: every rank).
  gradcomm_group_s *group = nullptr;
  /// Gossip: copies this rank pushed, and the last copy it mixed
  /// (sender, sequence), so a copy is never mixed twice.
  uint64_t pushes = 0;
  int lastSender = -1;
  uint64_t lastSequence = 0;
  /// Gossip: staleness of each mixed copy (bins 0, 1, 2, 3, 4-7, 8-15,
  /// 16-31, >= 32 steps), and copies refused as torn.
  uint64_t staleness[kStalenessBins] = {};
  uint64_t torn = 0;
};

/// The windows, by state name; freed, collectively, by releaseWindows
/// (gradcomm_finalize, or MPI finalizing).
std::map<std::string, AsyncWindow> &windows() {
  static auto *made = new std::map<std::string, AsyncWindow>;
  return *made;
}

} // namespace

namespace {

/// A failure another rank wrote into this rank's window (status 0: none).
struct FailureRecord {
  int32_t status;
  int32_t rank;
  char text[504];
};

/// The head of a gossip mailbox; the data follow, then `sequence` again.
struct MailHeader {
  uint64_t sequence; // 0: nothing arrived yet
  int64_t senderStep;
  int32_t sender;
  int32_t reserved;
};

constexpr int64_t kMailOffset = sizeof(FailureRecord);

int64_t mailboxBytes(int64_t count) {
  return kMailOffset + static_cast<int64_t>(sizeof(MailHeader)) +
         static_cast<int64_t>(sizeof(float)) * count +
         static_cast<int64_t>(sizeof(uint64_t));
}

/// A return code of `window`'s call `what` as a status.
gradcomm_status checked(const Call &call, const AsyncWindow &window, int error,
                        const char *what) {
  return call.transport(*window.window, error, what);
}

enum class Lock { Shared, Exclusive };

/// Locks `rank`'s part of `window`, runs `body`, unlocks.
template <typename Body>
gradcomm_status withLock(const Call &call, AsyncWindow &window, int rank,
                         Lock lock, Body &&body) {
  GRADCOMM_RETURN_IF_ERROR(
      checked(call, window, window.window->lock(rank, lock == Lock::Exclusive),
              "window lock"));
  gradcomm_status status = body();
  gradcomm_status unlocked =
      checked(call, window, window.window->unlock(rank), "window unlock");
  return status != GRADCOMM_OK ? status : unlocked;
}

/// Another rank's failure recorded in this rank's window: adopted (same
/// status and message) and returned. Under a shared lock, so the check
/// never waits for the other ranks' shared locks on this rank's part (the
/// asynchronous EASGD center on rank 0 is under one most of the time).
gradcomm_status pendingFailure(const Call &call, AsyncWindow &window) {
  const int rank = context().rank;
  FailureRecord record{};
  GRADCOMM_RETURN_IF_ERROR(withLock(call, window, rank, Lock::Shared, [&] {
    // This rank's own part, read in place once the window's copy is
    // current; the text was complete before the status was set.
    GRADCOMM_RETURN_IF_ERROR(
        checked(call, window, window.window->syncLocal(), "window sync"));
    std::memcpy(&record, window.window->local(), sizeof(record));
    return GRADCOMM_OK;
  }));
  if (record.status == GRADCOMM_OK)
    return GRADCOMM_OK;
  record.text[sizeof(record.text) - 1] = '\0';
  return call.adopt(static_cast<gradcomm_status>(record.status), record.text);
}

/// This rank failed with `status` (gradcomm_last_error() says why): the
/// failure goes into every rank's window, text first and then the status
/// (atomically), so each fails with it at its next call on this state.
/// Returns `status`.
gradcomm_status spreadFailure(const Call &call, AsyncWindow &window,
                              gradcomm_status status) {
  const Context &ctx = context();
  FailureRecord record{};
  record.status = status;
  record.rank = ctx.rank;
  std::snprintf(record.text, sizeof(record.text), "%s", gradcomm_last_error());
  Window &to = *window.window;
  for (int rank = 0; rank < ctx.size; ++rank)
    withLock(call, window, rank, Lock::Shared, [&] {
      GRADCOMM_RETURN_IF_ERROR(
          checked(call, window,
                  to.put(record.text, sizeof(record.text), rank,
                         offsetof(FailureRecord, text)),
                  "put (failure)"));
      GRADCOMM_RETURN_IF_ERROR(
          checked(call, window, to.flush(rank), "window flush"));
      static_assert(offsetof(FailureRecord, rank) == sizeof(int32_t),
                    "status and rank are stored as two int32s");
      return checked(call, window, to.storeAtomic(&record.status, 2, rank, 0),
                     "atomic store (failure)");
    });
  return call.adopt(status, record.text);
}

/// Passive-target operations complete only when the target's transport
/// makes progress: without help, a put to a rank busy computing waits until
/// that rank next calls the transport, which would make the "asynchronous"
/// ops wait for their peers after all. While windows are open, the
/// transport's progress thread (Transport::startWindowProgress) moves it
/// on: under MPI it needs MPI_THREAD_MULTIPLE, which the runtime asks for
/// when it initializes MPI; without it the ops still work, waiting for
/// their peers, and rank 0 says so once.
///
/// The thread must be out of MPI before MPI_Finalize starts (MPI-3.1
/// section 12.4.3). Where the runtime initialized MPI, gradcomm_finalize
/// stops it first. Where the trainer owns MPI, the runtime cannot see
/// MPI_Finalize coming (the release callback runs inside it, too late), so
/// the thread runs only if the trainer asks, GRADCOMM_ASYNC_PROGRESS=1,
/// and so takes on calling gradcomm_finalize before MPI_Finalize. The
/// thread is the world transport's: MPI's progress is the process's.
class ProgressPump {
public:
  gradcomm_status start(const Call &call) {
    // One rank has no peer to wait for. GRADCOMM_ASYNC_PROGRESS=0 turns
    // the thread off (to measure what it buys).
    const char *setting = std::getenv("GRADCOMM_ASYNC_PROGRESS");
    const std::string asked = setting ? setting : "";
    Transport &world = *context().world.transport;
    if (running || warned || context().size == 1 || asked == "0" ||
        !world.windowsNeedProgress())
      return GRADCOMM_OK;
    if (!context().ownsMpi && asked != "1") {
      warned = true;
      if (context().rank == 0)
        std::fprintf(stderr,
                     "gradcomm: MPI belongs to the trainer: asynchronous "
                     "gossip and EASGD progress in its MPI calls only; "
                     "GRADCOMM_ASYNC_PROGRESS=1 starts the runtime's "
                     "progress thread (then call gradcomm_finalize before "
                     "MPI_Finalize)\n");
      return GRADCOMM_OK;
    }
    std::string unavailable;
    GRADCOMM_RETURN_IF_ERROR(call.transport(
        world, world.startWindowProgress(&unavailable), "window progress"));
    if (!unavailable.empty()) {
      warned = true;
      if (context().rank == 0)
        std::fprintf(stderr,
                     "gradcomm: %s: asynchronous gossip and EASGD wait for "
                     "their peers' next %s call\n",
                     unavailable.c_str(), world.name());
      return GRADCOMM_OK;
    }
    running = true;
    return GRADCOMM_OK;
  }

  void stop() {
    if (running)
      context().world.transport->stopWindowProgress();
    running = false;
    warned = false;
  }

private:
  bool running = false;
  bool warned = false;
};

ProgressPump pump;

/// The window of `name`, created on its first use. Creation is
/// collective: the ranks first agree that each of them got this far
/// (`local`: this rank's validation), then create the window, zero their
/// parts, run `initialize` (collective too) and wait for each other, so no
/// put lands in a part before it is ready.
template <typename Initialize>
gradcomm_status openWindow(const Call &call, const char *name, int64_t bytes,
                           bool center, bool sharded, gradcomm_status local,
                           AsyncWindow *&window, Initialize &&initialize) {
  Context &ctx = context();
  auto it = windows().find(name);
  if (it != windows().end()) {
    // Every rank is past the collective first call: a failure here reaches
    // the others through their windows.
    if (local != GRADCOMM_OK)
      return spreadFailure(call, it->second, local);
    if (it->second.window->bytes() != bytes || it->second.center != center ||
        it->second.sharded != sharded)
      return call.fail(GRADCOMM_ERR_STATE,
                       "state '" + std::string(name) +
                           "' is already used by another asynchronous op, "
                           "another center placement or another size");
    // The window's ranks are the ranks of the group it was made in.
    if (it->second.group != ctx.active)
      return call.fail(GRADCOMM_ERR_STATE,
                       "state '" + std::string(name) + "' was made in " +
                           groupLabel(it->second.group) + " and is used in " +
                           groupLabel(ctx.active));
    window = &it->second;
    return GRADCOMM_OK;
  }
  GRADCOMM_RETURN_IF_ERROR(agreeOnStatus(call, local));
  AsyncWindow fresh;
  fresh.center = center;
  fresh.sharded = sharded;
  fresh.group = ctx.active;
  Transport &on = transport();
  // A window that was made is kept even when its set-up failed: freeing
  // it is collective (releaseWindows).
  const int error = on.openWindow(bytes, &fresh.window);
  if (fresh.window)
    window = &windows().emplace(name, std::move(fresh)).first->second;
  GRADCOMM_RETURN_IF_ERROR(call.transport(on, error, "window open"));
  if (!window)
    return call.fail(GRADCOMM_ERR_INTERNAL, std::string("the transport '") +
                                                on.name() + "' made no window");
  GRADCOMM_RETURN_IF_ERROR(pump.start(call));
  GRADCOMM_RETURN_IF_ERROR(initialize());
  int32_t ready = 1;
  return allReduce(call, &ready, 1, Element::Int32, Reduction::Min,
                   "all-reduce (window ready)");
}

/// The non-finite policy on this rank's replica, with no collective to
/// agree in: OK to go on; GRADCOMM_ERR_NON_FINITE spread to every rank
/// (error policy); or `*skip` (skip policy: nothing sent, nothing mixed).
gradcomm_status checkReplica(const Call &call, AsyncWindow &window,
                             const float *x, int64_t count, bool *skip) {
  *skip = false;
  const Context &ctx = context();
  if (ctx.nonFinitePolicy == GRADCOMM_NONFINITE_PROPAGATE ||
      !cpu::exceedsLimit(cpu::maxMagnitudeKey(x, count), FLT_MAX))
    return GRADCOMM_OK;
  if (ctx.nonFinitePolicy == GRADCOMM_NONFINITE_SKIP) {
    *skip = true;
    return GRADCOMM_OK;
  }
  return spreadFailure(
      call, window,
      call.fail(GRADCOMM_ERR_NON_FINITE, "non-finite replica on rank " +
                                             std::to_string(ctx.rank) +
                                             " (NaN or Inf); it was not sent"));
}

/// The elements [begin, end) of an asynchronous EASGD center of `count`
/// elements that `host`'s window holds.
struct CenterPart {
  int64_t begin;
  int64_t end;
  int count() const { return static_cast<int>(end - begin); }
};

CenterPart centerPart(bool sharded, int64_t count, int host) {
  const int size = context().size;
  if (!sharded)
    return host == 0 ? CenterPart{0, count} : CenterPart{0, 0};
  return {count * host / size, count * (host + 1) / size};
}

/// Element-wise atomic read of `host`'s `part` of the center (a no-op
/// accumulate) into the same elements of `center`, inside a lock epoch on
/// `host`; complete (flushed) when it returns.
gradcomm_status readCenterPart(const Call &call, AsyncWindow &window, int host,
                               CenterPart part, float *center) {
  Window &from = *window.window;
  GRADCOMM_RETURN_IF_ERROR(checked(
      call, window,
      from.readAtomic(center + part.begin, part.count(), host, kMailOffset),
      "atomic read (center)"));
  return checked(call, window, from.flush(host), "window flush");
}

/// Reads every part of the center into `center`, one host at a time.
gradcomm_status readWholeCenter(const Call &call, AsyncWindow &window,
                                float *center, int64_t count) {
  for (int host = 0; host < context().size; ++host) {
    CenterPart part = centerPart(window.sharded, count, host);
    if (part.count() == 0)
      continue;
    GRADCOMM_RETURN_IF_ERROR(withLock(call, window, host, Lock::Shared, [&] {
      return readCenterPart(call, window, host, part, center);
    }));
  }
  return GRADCOMM_OK;
}

/// What every asynchronous call does before its exchange: adopt another
/// rank's failure, apply the non-finite policy, count the call, advance
/// the state's step (`*step`: the one before). `*exchange` is true when
/// this call exchanges (not skipped, and on a multiple of `period`).
gradcomm_status beginCall(const Call &call, AsyncWindow &window, State &state,
                          const char *stateName, const float *x, int64_t count,
                          int64_t period, uint64_t *step, bool *exchange) {
  *exchange = false;
  GRADCOMM_RETURN_IF_ERROR(pendingFailure(call, window));
  bool skip = false;
  GRADCOMM_RETURN_IF_ERROR(checkReplica(call, window, x, count, &skip));
  gradcomm_op_stats &stats = opStats(stateName);
  stats.calls += 1;
  *step = state.step;
  state.step += 1;
  if (skip)
    stats.skipped_non_finite += 1;
  else
    *exchange = *step % static_cast<uint64_t>(period) == 0;
  return GRADCOMM_OK;
}

int stalenessBin(int64_t staleness) {
  if (staleness < 4)
    return static_cast<int>(std::max<int64_t>(staleness, 0));
  if (staleness < 8)
    return 4;
  if (staleness < 16)
    return 5;
  if (staleness < 32)
    return 6;
  return 7;
}

/// Arguments every asynchronous op checks.
gradcomm_status validateCommon(const Call &call, const char *stateName,
                               const float *x, int64_t count, int64_t period) {
  // One put carries the whole replica in bytes (an int count).
  GRADCOMM_RETURN_IF_ERROR(
      requireReplica(call, stateName, x, count, (INT_MAX - 1024) / 4, period));
  GRADCOMM_RETURN_IF_ERROR(requireHostTensors(call, "the asynchronous op"));
  if (!transport().hasWindows())
    return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                     std::string("the asynchronous op needs one-sided "
                                 "communication (windows), which the "
                                 "transport '") +
                         transport().name() + "' does not have");
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_gossip_async_f32(const char *stateName, float *x,
                                          int64_t count,
                                          gradcomm_schedule schedule,
                                          float mixing, uint64_t seed,
                                          int64_t period) {
  return guarded("gossip_async_f32", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    const Context &ctx = context();
    State *state = nullptr;
    gradcomm_status local = [&] {
      GRADCOMM_RETURN_IF_ERROR(
          validateCommon(call, stateName, x, count, period));
      GRADCOMM_RETURN_IF_ERROR(
          validateSchedule(call, schedule, ctx.size, /*pairing=*/false));
      GRADCOMM_RETURN_IF_ERROR(requireMixing(call, mixing));
      return lookupState(call, stateName, 0, state);
    }();
    AsyncWindow *window = nullptr;
    GRADCOMM_RETURN_IF_ERROR(openWindow(call, stateName, mailboxBytes(count),
                                        /*center=*/false, /*sharded=*/false,
                                        local, window,
                                        [] { return GRADCOMM_OK; }));
    uint64_t step = 0;
    bool exchange = false;
    GRADCOMM_RETURN_IF_ERROR(beginCall(call, *window, *state, stateName, x,
                                       count, period, &step, &exchange));
    if (!exchange)
      return GRADCOMM_OK;
    gradcomm_op_stats &stats = opStats(stateName);
    const double start = now();

    // Push: header, data, sequence again, in one put.
    const size_t dataBytes = sizeof(float) * static_cast<size_t>(count);
    const int64_t mailBytes = mailboxBytes(count) - kMailOffset;
    static thread_local std::vector<char> buffer;
    buffer.resize(static_cast<size_t>(mailBytes));
    int peer = schedulePeer(schedule, seed, step / period, ctx.rank, ctx.size);
    if (peer >= 0) {
      MailHeader header{++window->pushes, static_cast<int64_t>(step), ctx.rank,
                        0};
      std::memcpy(buffer.data(), &header, sizeof(header));
      std::memcpy(buffer.data() + sizeof(header), x, dataBytes);
      // GRADCOMM_FAULT_TEAR_MAIL=1 (tests only): the trailer disagrees with
      // the header, as a copy overwritten while it was read would; the
      // receiver must refuse it (AsyncGossip.RefusesATornCopy).
      uint64_t trailer = header.sequence;
      if (const char *tear = std::getenv("GRADCOMM_FAULT_TEAR_MAIL");
          tear && std::string(tear) == "1")
        trailer ^= 1;
      std::memcpy(buffer.data() + sizeof(header) + dataBytes, &trailer,
                  sizeof(trailer));
      GRADCOMM_RETURN_IF_ERROR(
          withLock(call, *window, peer, Lock::Exclusive, [&] {
            return checked(call, *window,
                           window->window->put(buffer.data(), mailBytes, peer,
                                               kMailOffset),
                           "put (mailbox)");
          }));
      stats.messages += 1;
      stats.value_bytes_sent += dataBytes;
    }

    // Mix with the freshest copy in this rank's mailbox, if it is new.
    GRADCOMM_RETURN_IF_ERROR(
        withLock(call, *window, ctx.rank, Lock::Exclusive, [&] {
          GRADCOMM_RETURN_IF_ERROR(checked(
              call, *window, window->window->syncLocal(), "window sync"));
          std::memcpy(buffer.data(), window->window->local() + kMailOffset,
                      static_cast<size_t>(mailBytes));
          return GRADCOMM_OK;
        }));
    MailHeader header;
    uint64_t trailer = 0;
    std::memcpy(&header, buffer.data(), sizeof(header));
    std::memcpy(&trailer, buffer.data() + sizeof(header) + dataBytes,
                sizeof(trailer));
    if (header.sequence != 0 && header.sequence != trailer) {
      window->torn += 1;
    } else if (header.sequence != 0 &&
               !(header.sender == window->lastSender &&
                 header.sequence == window->lastSequence)) {
      cpu::mix(x,
               reinterpret_cast<const float *>(buffer.data() + sizeof(header)),
               count, mixing);
      window->lastSender = header.sender;
      window->lastSequence = header.sequence;
      window->staleness[stalenessBin(static_cast<int64_t>(step) -
                                     header.senderStep)] += 1;
      stats.value_bytes_received += dataBytes;
    }
    stats.seconds += now() - start;
    return GRADCOMM_OK;
  });
}

namespace {

/// Asynchronous EASGD with the center on rank 0 or sharded: for each part
/// of the center (starting with this rank's own, so that the workers do
/// not all queue at the same host), read it, move toward it by
/// e = alpha (x - c) and add e to it, one host's lock at a time.
gradcomm_status elasticAverageAsync(const Call &call, const char *stateName,
                                    float *x, int64_t count, float alpha,
                                    int64_t period, bool sharded) {
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  const Context &ctx = context();
  State *state = nullptr;
  gradcomm_status local = [&] {
    GRADCOMM_RETURN_IF_ERROR(validateCommon(call, stateName, x, count, period));
    GRADCOMM_RETURN_IF_ERROR(requireElasticAlpha(call, alpha));
    return lookupState(call, stateName, count, state);
  }();
  const CenterPart own = centerPart(sharded, count, ctx.rank);
  const int64_t ownBytes = static_cast<int64_t>(sizeof(float)) * own.count();
  AsyncWindow *window = nullptr;
  GRADCOMM_RETURN_IF_ERROR(openWindow(
      call, stateName, kMailOffset + ownBytes, /*center=*/true, sharded, local,
      window, [&]() -> gradcomm_status {
        // A fresh state: the center starts at the replicas' mean; a
        // restored one at its checkpoint (the same on every rank).
        float *center = state->data();
        if (state->step == 0)
          GRADCOMM_RETURN_IF_ERROR(meanOverRanks(call, x, count, center));
        // A put to this rank's own part, not a store: MPICH 4.0.2 (ch4:ucx)
        // serves other ranks' reads of ranks 1..n-1 from a copy that local
        // stores, even under the lock, do not reach (they read zeros).
        AsyncWindow &created = windows().at(stateName);
        return withLock(call, created, ctx.rank, Lock::Exclusive, [&] {
          return checked(call, created,
                         created.window->put(center + own.begin, ownBytes,
                                             ctx.rank, kMailOffset),
                         "put (center part)");
        });
      }));
  uint64_t step = 0;
  bool exchange = false;
  GRADCOMM_RETURN_IF_ERROR(beginCall(call, *window, *state, stateName, x, count,
                                     period, &step, &exchange));
  if (!exchange)
    return GRADCOMM_OK;
  gradcomm_op_stats &stats = opStats(stateName);
  const double start = now();
  float *center = state->data();
  static thread_local std::vector<float> elastic;
  elastic.resize(count);
  for (int offset = 0; offset < ctx.size; ++offset) {
    const int host = (ctx.rank + offset) % ctx.size;
    const CenterPart part = centerPart(sharded, count, host);
    if (part.count() == 0)
      continue;
    GRADCOMM_RETURN_IF_ERROR(withLock(call, *window, host, Lock::Shared, [&] {
      // Element-wise atomic read of the part, then this rank's elastic
      // difference added to it.
      GRADCOMM_RETURN_IF_ERROR(
          readCenterPart(call, *window, host, part, center));
      for (int64_t i = part.begin; i < part.end; ++i) {
        elastic[i] = alpha * (x[i] - center[i]);
        x[i] = x[i] - elastic[i];
      }
      return checked(call, *window,
                     window->window->accumulateSum(elastic.data() + part.begin,
                                                   part.count(), host,
                                                   kMailOffset),
                     "atomic add (center)");
    }));
    stats.messages += 2;
  }
  const uint64_t bytes = sizeof(float) * static_cast<uint64_t>(count);
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_elastic_average_async_f32(const char *stateName,
                                                   float *x, int64_t count,
                                                   float alpha,
                                                   int64_t period) {
  return guarded("elastic_average_async_f32", stateName, [&](const Call &call) {
    return elasticAverageAsync(call, stateName, x, count, alpha, period,
                               /*sharded=*/false);
  });
}

gradcomm_status gradcomm_elastic_average_sharded_f32(const char *stateName,
                                                     float *x, int64_t count,
                                                     float alpha,
                                                     int64_t period) {
  return guarded(
      "elastic_average_sharded_f32", stateName, [&](const Call &call) {
        return elasticAverageAsync(call, stateName, x, count, alpha, period,
                                   /*sharded=*/true);
      });
}

namespace {

gradcomm_status refreshAsyncState(const Call &call, const std::string &name,
                                  State &state) {
  auto it = windows().find(name);
  if (it == windows().end() || !it->second.center || state.count == 0)
    return GRADCOMM_OK;
  // The center's parts sit on the ranks of the window's group.
  GroupScope scope(it->second.group);
  return readWholeCenter(call, it->second, state.data(), state.count);
}

void releaseWindows() {
  pump.stop();
  // Collective: every rank frees its windows at finalize.
  windows().clear();
}

/// The core frees the windows and refreshes centers through these
/// (Internal.h, Extensions).
[[maybe_unused]] const bool registered =
    (extensions().releaseWindows = releaseWindows,
     extensions().refreshState = refreshAsyncState, true);

} // namespace

gradcomm_status gradcomm_stats_staleness(const char *stateName,
                                         uint64_t histogram[8],
                                         uint64_t *torn) {
  return guarded("stats_staleness", stateName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "histogram", histogram));
    auto &open = windows();
    auto it = open.find(stateName);
    const AsyncWindow empty;
    const AsyncWindow &window = it == open.end() ? empty : it->second;
    std::copy(window.staleness, window.staleness + kStalenessBins, histogram);
    if (torn)
      *torn = window.torn;
    return GRADCOMM_OK;
  });
}
