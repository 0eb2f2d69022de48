//===- Support.cpp - State lookup, agreement, collectives, watchdog ------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sched.h>
#include <time.h>
#include <vector>

using namespace gradcomm;

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

void gradcomm::divideByGroupSize(float *data, int64_t count) {
  const float groupSize = static_cast<float>(context().size);
  for (int64_t i = 0; i < count; ++i)
    data[i] /= groupSize;
}

uint64_t gradcomm::fnv1a(const void *data, size_t size, uint64_t hash) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
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

gradcomm_status
gradcomm::checkConsistencyOfInput(const Call &call, const float *input,
                                  int64_t count, float limit,
                                  const std::vector<CheckField> &fields) {
  // A rank whose scan failed still joins the agreement: every rank then
  // fails with its message.
  bool nonFinite = false;
  gradcomm_status local = GRADCOMM_OK;
  if (scanForNonFinite())
    local = backend().exceedsLimit(call, input, count, limit, &nonFinite);
  return checkConsistency(call, fields, nonFinite, local);
}

bool gradcomm::scanForNonFinite() {
  const Context &ctx = context();
  return ctx.consistencyCheck &&
         ctx.nonFinitePolicy != GRADCOMM_NONFINITE_PROPAGATE;
}

float gradcomm::inputLimit(bool summed) {
  const float max = std::numeric_limits<float>::max();
  return summed ? max / (2.0f * static_cast<float>(context().size)) : max;
}

bool gradcomm::skippedNonFinite(gradcomm_status agreed, const char *opName) {
  if (agreed != GRADCOMM_ERR_NON_FINITE ||
      context().nonFinitePolicy != GRADCOMM_NONFINITE_SKIP)
    return false;
  gradcomm_op_stats &stats = opStats(opName);
  stats.calls += 1;
  stats.skipped_non_finite += 1;
  return true;
}

gradcomm_status gradcomm::zeroBuffer(const Call &call, float *data,
                                     int64_t count) {
  if (count <= 0)
    return GRADCOMM_OK;
  return backend().zero(call, data, count);
}

int64_t gradcomm::floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

namespace {

/// Slots of the agreement buffer: operation, name and sequence number,
/// then the entry point's fields. Fixed, so a rank that failed before it
/// knew its fields sends a buffer of the same size.
constexpr size_t kAgreementSlots = 12;

/// FNV-1a of `text`, in 62 bits (positive in an int64 and when negated).
int64_t nameHash(const char *text) {
  text = text ? text : "";
  return static_cast<int64_t>(fnv1a(text, std::strlen(text)) >> 2);
}

/// The lowest failing rank's status and message, on every rank.
struct FailureMessage {
  int32_t status;
  char text[500];
};

gradcomm_status shareFailure(const Call &call, int root,
                             gradcomm_status local) {
  const Context &ctx = context();
  FailureMessage message{};
  if (ctx.rank == root) {
    message.status = local;
    std::snprintf(message.text, sizeof(message.text), "%s",
                  gradcomm_last_error());
  }
  GRADCOMM_RETURN_IF_ERROR(broadcast(call, &message, sizeof(message),
                                     Element::Byte, root,
                                     "broadcast (failure message)"));
  message.text[sizeof(message.text) - 1] = '\0';
  return call.adopt(static_cast<gradcomm_status>(message.status), message.text);
}

} // namespace

gradcomm_status gradcomm::agreeOnStatus(const Call &call,
                                        gradcomm_status local) {
  const Context &ctx = context();
  int64_t failing = local != GRADCOMM_OK ? ctx.size - ctx.rank : 0;
  GRADCOMM_RETURN_IF_ERROR(allReduce(call, &failing, 1, Element::Int64,
                                     Reduction::Max, "all-reduce (status)"));
  if (failing == 0)
    return GRADCOMM_OK;
  return shareFailure(call, static_cast<int>(ctx.size - failing), local);
}

gradcomm_status
gradcomm::checkConsistency(const Call &call,
                           const std::vector<CheckField> &fields,
                           bool localNonFinite, gradcomm_status local,
                           const AgreementPayload *payload) {
  Context &ctx = context();
  gradcomm_status agreed = local;
  if (ctx.consistencyCheck) {
    // Fixed-size, on the stack: this runs before every collective.
    std::array<CheckField, kAgreementSlots> all = {
        CheckField{"the operation", nameHash(call.operationName())},
        CheckField{"the op or state name", nameHash(call.name())},
        CheckField{"the number of collective calls so far",
                   static_cast<int64_t>(ctx.sequence++)},
        CheckField{"the non-finite policy", ctx.nonFinitePolicy}};
    size_t used = 4;
    if (local == GRADCOMM_OK) {
      if (used + fields.size() > kAgreementSlots)
        return call.fail(GRADCOMM_ERR_INTERNAL, "too many agreement fields");
      for (const CheckField &field : fields)
        all[used++] = field;
    }
    // One max all-reduce: every slot's max and (negated) min, the
    // lowest failing rank and the lowest rank with a non-finite gradient
    // (both encoded as size - rank), then the payload: the root's words,
    // INT64_MIN from every other rank, so the max is the root's.
    const size_t n = kAgreementSlots;
    constexpr size_t kPayloadWords = kAgreementPayloadBytes / 8;
    std::array<int64_t, 2 * kAgreementSlots + 2 + kPayloadWords> buffer{};
    for (size_t i = 0; i < used; ++i) {
      buffer[i] = all[i].value;
      buffer[n + i] = -all[i].value;
    }
    buffer[2 * n] = local != GRADCOMM_OK ? ctx.size - ctx.rank : 0;
    buffer[2 * n + 1] = localNonFinite ? ctx.size - ctx.rank : 0;
    int64_t *words = buffer.data() + 2 * n + 2;
    if (payload && payload->bytes > kAgreementPayloadBytes)
      return call.fail(GRADCOMM_ERR_INTERNAL, "agreement payload too large");
    if (payload && ctx.rank == payload->root)
      std::memcpy(words, payload->send, payload->bytes);
    else
      std::fill(words, words + kPayloadWords,
                std::numeric_limits<int64_t>::min());
    GRADCOMM_RETURN_IF_ERROR(
        allReduce(call, buffer.data(), static_cast<int64_t>(buffer.size()),
                  Element::Int64, Reduction::Max, "all-reduce (agreement)"));
    if (buffer[2 * n] != 0) {
      agreed =
          shareFailure(call, static_cast<int>(ctx.size - buffer[2 * n]), local);
    } else {
      for (size_t i = 0; i < used && agreed == GRADCOMM_OK; ++i) {
        int64_t max = buffer[i], min = -buffer[n + i];
        if (min == max)
          continue;
        std::string cause = std::string("ranks disagree on ") + all[i].name;
        if (i < 3)
          cause += ": calls were issued in different orders or with "
                   "different names on some ranks";
        else
          cause += " (min " + std::to_string(min) + ", max " +
                   std::to_string(max) + ")";
        agreed = call.fail(GRADCOMM_ERR_MISMATCH, cause);
      }
      if (agreed == GRADCOMM_OK && buffer[2 * n + 1] != 0)
        agreed = call.fail(
            GRADCOMM_ERR_NON_FINITE,
            "non-finite input on rank " +
                std::to_string(ctx.size - buffer[2 * n + 1]) +
                " (NaN, Inf, or a magnitude the sum over the group could "
                "overflow); nothing changed on any rank");
    }
    if (agreed == GRADCOMM_OK && payload)
      std::memcpy(payload->receive, words, payload->bytes);
  }
  // A call the skip policy turns into a no-op keeps using its state (a new
  // one holds zeros: as if it had not been created).
  const bool skipping = agreed == GRADCOMM_ERR_NON_FINITE &&
                        ctx.nonFinitePolicy == GRADCOMM_NONFINITE_SKIP;
  if (agreed != GRADCOMM_OK && !skipping) {
    for (const std::string &name : call.createdStates)
      ctx.states.erase(name);
    call.createdStates.clear();
  }
  return agreed;
}

gradcomm_status gradcomm::requireStartable(const Call &call,
                                           gradcomm_request *request,
                                           StartedForm form,
                                           const char *blocking) {
  if (!request)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "request pointer is null");
  *request = nullptr;
  if (!backend().starts(form))
    return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                     std::string("this started form does not run on the ") +
                         backend().name() + " backend; use " + blocking);
  return GRADCOMM_OK;
}

gradcomm_request
gradcomm::trackRequest(std::unique_ptr<gradcomm_request_s> started) {
  if (!started->transport)
    started->transport = &transport();
  context().requestsInFlight += 1;
  return started.release();
}

gradcomm_status gradcomm::requireNoRequestInFlight(const Call &call,
                                                   const char *what) {
  const int64_t inFlight = context().requestsInFlight;
  if (inFlight == 0)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_STATE,
                   std::to_string(inFlight) +
                       " started call(s) not waited for; gradcomm_wait for "
                       "them before " +
                       what);
}

gradcomm_op_stats &gradcomm::opStats(const char *name) {
  return context().stats[name ? name : ""];
}

uint64_t gradcomm::allReduceBytes(uint64_t bytes, int size) {
  // Ring all-reduce: reduce-scatter + all-gather, 2 (n - 1) / n of the
  // buffer each way.
  return size > 1 ? 2 * bytes * (size - 1) / size : 0;
}

uint64_t gradcomm::broadcastBytes(uint64_t bytes, int size) {
  // Scatter + all-gather broadcast (what MPICH uses for large messages):
  // (n - 1) / n of the buffer each way on every rank.
  return size > 1 ? bytes * (size - 1) / size : 0;
}

Transport &gradcomm::transport() { return *context().transport; }

/// Runs `start(chunk, chunkCount, transfer)` for each chunk of at most
/// kTransportMaxCount elements of `data`, then `started(transfer)`; stops
/// at the first failure, reported as `what`.
template <typename Start, typename Started>
static gradcomm_status inChunks(const Call &call, void *data, int64_t count,
                                Element element, const char *what,
                                Start &&start, Started &&started) {
  Transport &on = transport();
  auto *bytes = static_cast<char *>(data);
  for (int64_t offset = 0; offset < count; offset += kTransportMaxCount) {
    Transfer transfer;
    GRADCOMM_RETURN_IF_ERROR(call.transport(
        on,
        start(on, bytes + offset * elementBytes(element),
              std::min(count - offset, kTransportMaxCount), transfer),
        what));
    GRADCOMM_RETURN_IF_ERROR(started(on, transfer));
  }
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startAllReduce(const Call &call, void *data,
                                         int64_t count, Element element,
                                         Reduction reduction,
                                         std::vector<Transfer> &transfers,
                                         const char *what) {
  return inChunks(
      call, data, count, element, what,
      [&](Transport &on, void *chunk, int64_t n, Transfer &transfer) {
        return on.startAllReduce(chunk, n, element, reduction, transfer);
      },
      [&](Transport &, Transfer &transfer) {
        transfers.push_back(transfer);
        return GRADCOMM_OK;
      });
}

gradcomm_status gradcomm::allReduce(const Call &call, void *data, int64_t count,
                                    Element element, Reduction reduction,
                                    const char *what) {
  std::vector<Transfer> transfers;
  GRADCOMM_RETURN_IF_ERROR(
      startAllReduce(call, data, count, element, reduction, transfers, what));
  for (Transfer &transfer : transfers)
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, transfer, what));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startAllReduceSum(const Call &call, float *data,
                                            int64_t count,
                                            std::vector<Transfer> &transfers) {
  return startAllReduce(call, data, count, Element::Float32, Reduction::Sum,
                        transfers, "all-reduce");
}

gradcomm_status gradcomm::allReduceSum(const Call &call, float *data,
                                       int64_t count) {
  return allReduce(call, data, count, Element::Float32, Reduction::Sum,
                   "all-reduce");
}

gradcomm_status gradcomm::broadcast(const Call &call, void *data, int64_t count,
                                    Element element, int root,
                                    const char *what) {
  // Each chunk waited for without monopolizing the core.
  return inChunks(
      call, data, count, element, what,
      [&](Transport &on, void *chunk, int64_t n, Transfer &transfer) {
        return on.startBroadcast(chunk, n, element, root, transfer);
      },
      [&](Transport &on, Transfer &transfer) {
        return waitYielding(call, on, transfer, what, root);
      });
}

gradcomm_status gradcomm::startAllGather(const Call &call, const void *send,
                                         int64_t count, Element element,
                                         void *receive, Transfer &transfer,
                                         const char *what) {
  Transport &on = transport();
  return call.transport(
      on, on.startAllGather(send, count, element, receive, transfer), what);
}

gradcomm_status gradcomm::allGather(const Call &call, const void *send,
                                    int64_t count, Element element,
                                    void *receive, const char *what) {
  Transfer transfer;
  GRADCOMM_RETURN_IF_ERROR(
      startAllGather(call, send, count, element, receive, transfer, what));
  return waitYielding(call, transfer, what);
}

gradcomm_status gradcomm::meanOverRanks(const Call &call, const float *x,
                                        int64_t count, float *mean) {
  std::copy(x, x + count, mean);
  GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, mean, count));
  divideByGroupSize(mean, count);
  return GRADCOMM_OK;
}

int gradcomm::indexBytes(int64_t bound) {
  return bound <= int64_t(INT32_MAX) + 1 ? 4 : 8;
}

int gradcomm::chunkIndexBytes(int64_t bound, int64_t chunkSize) {
  return chunkSize <= 256 ? 1 : chunkSize <= 65536 ? 2 : indexBytes(bound);
}

namespace {

/// Index j minus j * chunkSize (its offset inside chunk j; the index itself
/// when chunkSize is 0) as one Word per index, and back.
template <typename Word>
void encodeAs(const int64_t *indices, int64_t k, int64_t chunkSize,
              uint8_t *bytes) {
  for (int64_t j = 0; j < k; ++j) {
    const Word word = static_cast<Word>(indices[j] - j * chunkSize);
    std::memcpy(bytes + j * sizeof(Word), &word, sizeof(Word));
  }
}

template <typename Word>
void decodeAs(const uint8_t *bytes, int64_t k, int64_t chunkSize,
              int64_t *indices) {
  for (int64_t j = 0; j < k; ++j) {
    Word word;
    std::memcpy(&word, bytes + j * sizeof(Word), sizeof(Word));
    indices[j] = j * chunkSize + static_cast<int64_t>(word);
  }
}

} // namespace

void gradcomm::encodeIndices(const int64_t *indices, int64_t k, int width,
                             int64_t chunkSize, uint8_t *bytes) {
  switch (width) {
  case 1:
    return encodeAs<uint8_t>(indices, k, chunkSize, bytes);
  case 2:
    return encodeAs<uint16_t>(indices, k, chunkSize, bytes);
  case 4:
    return encodeAs<uint32_t>(indices, k, chunkSize, bytes);
  default:
    return encodeAs<uint64_t>(indices, k, chunkSize, bytes);
  }
}

void gradcomm::decodeIndices(const uint8_t *bytes, int64_t k, int width,
                             int64_t chunkSize, int64_t *indices) {
  switch (width) {
  case 1:
    return decodeAs<uint8_t>(bytes, k, chunkSize, indices);
  case 2:
    return decodeAs<uint16_t>(bytes, k, chunkSize, indices);
  case 4:
    return decodeAs<uint32_t>(bytes, k, chunkSize, indices);
  default:
    return decodeAs<uint64_t>(bytes, k, chunkSize, indices);
  }
}

gradcomm_status gradcomm::broadcastIndices(const Call &call, int64_t *data,
                                           int64_t count, int root, int width,
                                           int64_t chunkSize) {
  static thread_local std::vector<uint8_t> bytes;
  bytes.resize(count * width);
  if (context().rank == root)
    encodeIndices(data, count, width, chunkSize, bytes.data());
  GRADCOMM_RETURN_IF_ERROR(broadcast(call, bytes.data(), count * width,
                                     Element::Byte, root,
                                     "broadcast (indices)"));
  decodeIndices(bytes.data(), count, width, chunkSize, data);
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::waitPolling(
    const Call &call,
    const std::function<gradcomm_status(const Call &, bool *)> &test,
    const char *what, int peer) {
  // A blocking MPI call busy-polls: with more ranks than cores (4 ranks on
  // a 2-core machine), the waiting ranks take the cores the others need
  // to compute, and a step takes 100x longer. Test a little, then yield
  // the core between tests; with one rank per core the yield returns at
  // once.
  constexpr int kSpinsBeforeYield = 64;
  const Context &ctx = context();
  const double start = now();
  for (int spins = 0;; ++spins) {
    bool finished = false;
    GRADCOMM_RETURN_IF_ERROR(test(call, &finished));
    if (finished)
      return GRADCOMM_OK;
    if (spins < kSpinsBeforeYield)
      continue;
    sched_yield();
    if (ctx.timeoutSeconds > 0 && now() - start > ctx.timeoutSeconds)
      timedOut(call, what, peer, now() - start);
  }
}

gradcomm_status gradcomm::waitYielding(const Call &call, Transport &on,
                                       Transfer &transfer, const char *what,
                                       int peer) {
  return waitPolling(
      call,
      [&](const Call &, bool *finished) {
        return call.transport(on, on.test(transfer, finished), what);
      },
      what, peer);
}

gradcomm_status gradcomm::waitYielding(const Call &call, Transfer &transfer,
                                       const char *what, int peer) {
  return waitYielding(call, transport(), transfer, what, peer);
}

void gradcomm::alsoFinish(gradcomm_request_s &request,
                          std::function<void()> more) {
  request.finish = [first = std::move(request.finish), more = std::move(more)] {
    if (first)
      first();
    more();
  };
}

void gradcomm::alsoRelease(gradcomm_request_s &request,
                           std::function<void()> more) {
  request.release = [first = std::move(request.release),
                     more = std::move(more)] {
    if (first)
      first();
    more();
  };
}

void gradcomm::timedOut(const Call &call, const char *what, int peer,
                        double seconds) {
  const Context &ctx = context();
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%.1f", seconds);
  std::string peers = peer >= 0 ? "rank " + std::to_string(peer)
                                : std::string("the other ") +
                                      std::to_string(ctx.size - 1) +
                                      " rank(s) of the group";
  call.fail(
      GRADCOMM_ERR_TIMEOUT,
      std::string("timed out after ") + waited + " s in " + what +
          " waiting for " + peers +
          " (stopped, crashed, stuck on a device, or in another "
          "operation); a transport cannot cancel a collective, so the job "
          "is aborted (GRADCOMM_TIMEOUT sets the limit)");
  abortJob(gradcomm_last_error(), GRADCOMM_ERR_TIMEOUT);
}

void gradcomm::abortJob(const char *message, int code) {
  std::fprintf(stderr, "%s\n", message);
  std::fflush(stderr);
  Context &ctx = context();
  if (!ctx.initialized || !ctx.world.transport)
    std::abort();
  // MPICH's launcher kills every process as soon as one calls MPI_Abort,
  // and output still in its pipes is lost (seen in CI under load): give
  // it a quarter of a second to forward the message first.
  struct timespec pause = {0, 250 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  ctx.world.transport->abortJob(code);
  std::_Exit(code); // a transport's abortJob does not return; be sure
}

gradcomm_status gradcomm_set_timeout(double seconds) {
  return guarded("set_timeout", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    if (!(seconds >= 0) || seconds > 1e9)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "timeout must be in [0, 1e9] seconds, got " +
                           std::to_string(seconds));
    context().timeoutSeconds = seconds;
    return GRADCOMM_OK;
  });
}

double gradcomm::now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

gradcomm_status gradcomm::requireName(const Call &call, const char *argument,
                                      const char *value) {
  if (!value || !*value)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' is null or empty");
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requirePointer(const Call &call, const char *argument,
                                         const void *pointer) {
  if (!pointer)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' is null");
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireReplica(const Call &call,
                                         const char *stateName, const float *x,
                                         int64_t count, int64_t maxCount,
                                         int64_t period) {
  GRADCOMM_RETURN_IF_ERROR(requireName(call, "state", stateName));
  GRADCOMM_RETURN_IF_ERROR(requireRange(call, "count", count, 1, maxCount));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "x", x));
  return requireRange(call, "period", period, 1, INT64_MAX);
}

gradcomm_status gradcomm::requireMixing(const Call &call, float mixing) {
  if (mixing > 0.0f && mixing < 1.0f)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                   "'mixing' must be in (0, 1), got " + std::to_string(mixing));
}

gradcomm_status gradcomm::requireElasticAlpha(const Call &call, float alpha) {
  const int size = context().size;
  if (alpha > 0.0f && static_cast<double>(alpha) * size <= 1.0 + 1e-6)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                   "'alpha' must be in (0, 1/n] (n alpha is the center's "
                   "moving rate), got " +
                       std::to_string(alpha) +
                       " with n = " + std::to_string(size));
}

gradcomm_status gradcomm::requireRange(const Call &call, const char *argument,
                                       int64_t value, int64_t low,
                                       int64_t high) {
  if (value < low || value > high)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("'") + argument + "' must be in [" +
                         std::to_string(low) + ", " + std::to_string(high) +
                         "], got " + std::to_string(value));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::requireCountAndK(const Call &call, int64_t count,
                                           int64_t k) {
  GRADCOMM_RETURN_IF_ERROR(
      requireRange(call, "count", count, 1, INT64_MAX / 2));
  return requireRange(call, "k", k, 1, count);
}

gradcomm_status gradcomm::requireReduction(const Call &call,
                                           gradcomm_reduction reduction) {
  if (reduction != GRADCOMM_REDUCE_SUM && reduction != GRADCOMM_REDUCE_AVERAGE)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "unknown reduction " +
                         std::to_string(static_cast<int>(reduction)));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm_set_consistency_check(int enabled) {
  return guarded("set_consistency_check", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    context().consistencyCheck = enabled != 0;
    return GRADCOMM_OK;
  });
}

gradcomm_status
gradcomm_set_nonfinite_policy(gradcomm_nonfinite_policy policy) {
  return guarded("set_nonfinite_policy", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    int raw = static_cast<int>(policy);
    if (raw < GRADCOMM_NONFINITE_ERROR || raw > GRADCOMM_NONFINITE_PROPAGATE)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "unknown non-finite policy " + std::to_string(raw));
    context().nonFinitePolicy = policy;
    return GRADCOMM_OK;
  });
}

gradcomm_status
gradcomm_get_nonfinite_policy(gradcomm_nonfinite_policy *policy) {
  return guarded("get_nonfinite_policy", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "policy", policy));
    *policy = context().nonFinitePolicy;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_take_step_status(void) {
  gradcomm_status status = context().pendingStepStatus;
  context().pendingStepStatus = GRADCOMM_OK;
  return status;
}
