//===- Agreement.cpp - The ranks agree before they communicate ------------===//
//
// Part of the GradComm project.
//
// Internal.h, checkConsistency: one all-reduce per collective call carries
// what the ranks must agree on; the non-finite policy and its settings.
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

uint64_t gradcomm::fnv1a(const void *data, size_t size, uint64_t hash) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
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

/// Slots of the agreement buffer: operation, name, sequence number and
/// non-finite policy, then the entry point's fields (the most: the
/// compressed reduce-scatter's recipe form with segments, 8). Fixed, so a
/// rank that failed before it knew its fields sends a buffer of the same
/// size (the cost model counts its 58 int64).
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
