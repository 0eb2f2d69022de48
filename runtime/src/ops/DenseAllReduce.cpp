//===- DenseAllReduce.cpp - Dense all-reduce entry points -----------------===//
//
// Part of the GradComm project.
//
// Validate, agree, dispatch to the selected backend, count. The batched
// form packs small tensors on the host, so it runs on the CPU backend only.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Wire.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace gradcomm;

namespace {

/// The blocking and started forms' common part: arguments, agreement and
/// the non-finite policy. `*skipped`: the policy zeroed the buffer and
/// nothing is to be sent.
gradcomm_status beginDenseAllReduce(const Call &call, const char *opName,
                                    float *data, int64_t count,
                                    gradcomm_reduction reduction, bool *skipped,
                                    gradcomm_wire wire) {
  *skipped = false;
  GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
  GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
    if (count < 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "count must be >= 0, got " + std::to_string(count));
    if (!data && count > 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "data pointer is null");
    GRADCOMM_RETURN_IF_ERROR(requireWireOnHostOrDevice(call, wire));
    return requireReduction(call, reduction);
  }));
  // The non-finite policy (docs/runtime.md): the n-rank sum must not
  // overflow either, in the wire's type.
  std::vector<CheckField> fields = {
      {"count", count}, {"reduction", reduction}, {"wire", wire}};
  gradcomm_status agreed = checkConsistencyOfInput(
      call, data, count, wireInputLimit(wire, /*summed=*/true), fields);
  if (skippedNonFinite(agreed, opName)) {
    *skipped = true;
    return zeroBuffer(call, data, count);
  }
  return agreed;
}

/// The counters, once the sum (or mean) is in the buffer.
void countDenseAllReduce(const char *opName, int64_t count, double start,
                         gradcomm_wire wire) {
  const Context &ctx = context();
  gradcomm_op_stats &stats = opStats(opName);
  uint64_t bytes = allReduceBytes(wireValueBytes(wire) * count, ctx.size);
  stats.calls += 1;
  stats.messages += count > 0 ? 1 : 0;
  stats.value_bytes_sent += bytes;
  stats.value_bytes_received += bytes;
  stats.seconds += now() - start;
}

/// The blocking forms' body: the values travel as `wire`.
gradcomm_status denseAllReduce(const Call &call, const char *opName,
                               float *data, int64_t count, gradcomm_wire wire,
                               gradcomm_reduction reduction) {
  bool skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginDenseAllReduce(call, opName, data, count,
                                               reduction, &skipped, wire));
  if (skipped)
    return GRADCOMM_OK;
  double start = now();
  GRADCOMM_RETURN_IF_ERROR(denseAllReduceWire(
      call, data, count, reduction == GRADCOMM_REDUCE_AVERAGE, wire));
  countDenseAllReduce(opName, count, start, wire);
  return GRADCOMM_OK;
}

/// The started forms' body; `blocking` names the blocking form in the
/// refusal of a backend that does not start it.
gradcomm_status startDenseAllReduce(const Call &call, const char *opName,
                                    float *data, int64_t count,
                                    gradcomm_wire wire,
                                    gradcomm_reduction reduction,
                                    gradcomm_request *request,
                                    const char *blocking) {
  GRADCOMM_RETURN_IF_ERROR(
      requireStartable(call, request, StartedForm::DenseAllReduce, blocking));
  bool skipped = false;
  GRADCOMM_RETURN_IF_ERROR(beginDenseAllReduce(call, opName, data, count,
                                               reduction, &skipped, wire));
  auto started = std::make_unique<gradcomm_request_s>();
  started->opName = opName ? opName : "";
  started->skipped = skipped;
  const double start = now();
  if (!skipped) {
    GRADCOMM_RETURN_IF_ERROR(startDenseAllReduceWire(
        call, data, count, reduction == GRADCOMM_REDUCE_AVERAGE, wire,
        *started));
    alsoFinish(*started, [name = started->opName, count, start, wire] {
      countDenseAllReduce(name.c_str(), count, start, wire);
    });
  }
  *request = trackRequest(std::move(started));
  return GRADCOMM_OK;
}

} // namespace

gradcomm_status gradcomm_dense_all_reduce_f32(const char *opName, float *data,
                                              int64_t count,
                                              gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_f32", opName, [&](const Call &call) {
    return denseAllReduce(call, opName, data, count, GRADCOMM_WIRE_F32,
                          reduction);
  });
}

gradcomm_status
gradcomm_dense_all_reduce_wire_f32(const char *opName, float *data,
                                   int64_t count, gradcomm_wire wire,
                                   gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_wire_f32", opName, [&](const Call &call) {
    return denseAllReduce(call, opName, data, count, wire, reduction);
  });
}

gradcomm_status
gradcomm_dense_all_reduce_start_f32(const char *opName, float *data,
                                    int64_t count, gradcomm_reduction reduction,
                                    gradcomm_request *request) {
  return guarded("dense_all_reduce_start_f32", opName, [&](const Call &call) {
    return startDenseAllReduce(call, opName, data, count, GRADCOMM_WIRE_F32,
                               reduction, request,
                               "gradcomm_dense_all_reduce_f32");
  });
}

gradcomm_status gradcomm_dense_all_reduce_wire_start_f32(
    const char *opName, float *data, int64_t count, gradcomm_wire wire,
    gradcomm_reduction reduction, gradcomm_request *request) {
  return guarded(
      "dense_all_reduce_wire_start_f32", opName, [&](const Call &call) {
        return startDenseAllReduce(call, opName, data, count, wire, reduction,
                                   request,
                                   "gradcomm_dense_all_reduce_wire_f32");
      });
}

gradcomm_status gradcomm_wait(gradcomm_request *request) {
  const char *opName = request && *request ? (*request)->opName.c_str() : "";
  return guarded("wait", opName, [&](const Call &call) {
    if (!request || !*request)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "no request: never started, or already waited for");
    std::unique_ptr<gradcomm_request_s> started(*request);
    *request = nullptr;
    context().requestsInFlight -= 1;
    for (Transfer &transfer : started->transfers)
      GRADCOMM_RETURN_IF_ERROR(waitYielding(call, *started->transport, transfer,
                                            started->what, started->peer));
    if (started->poll)
      GRADCOMM_RETURN_IF_ERROR(
          waitPolling(call, started->poll, started->what, started->peer));
    if (!started->skipped && started->finish)
      started->finish();
    return GRADCOMM_OK;
  });
}

namespace {

/// gradcomm_dense_all_reduce_many_f32 packs tensors below kPackBelow
/// elements into shared buckets of at most kBucketElements; larger tensors
/// are reduced in place (no copies), all in flight together. Measured on
/// shared memory at 2 ranks (docs/performance.md): packing 100-element
/// tensors is 12x faster than a call each, packing 10,000-element tensors
/// was 2.4-3x slower (the copies and MPICH's larger messages cost more than
/// the calls they save), hence the small threshold.
constexpr int64_t kPackBelow = 4096;
constexpr int64_t kBucketElements = 65536;

/// One bucket: the tensors packed into `staging`, in order.
struct Bucket {
  std::vector<int64_t> members;
  std::vector<float> staging;
};

} // namespace

gradcomm_status
gradcomm_dense_all_reduce_many_f32(const char *opName, float *const *data,
                                   const int64_t *counts, int64_t tensors,
                                   gradcomm_reduction reduction) {
  return guarded("dense_all_reduce_many_f32", opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    int64_t total = 0;
    GRADCOMM_RETURN_IF_ERROR(validateCollectively(call, [&] {
      if (tensors < 0)
        return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                         "tensors must be >= 0, got " +
                             std::to_string(tensors));
      if (tensors > 0) {
        GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "data", data));
        GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "counts", counts));
      }
      for (int64_t t = 0; t < tensors; ++t) {
        if (counts[t] < 0 || counts[t] > (int64_t{1} << 62) - total)
          return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                           "counts[" + std::to_string(t) +
                               "] must be >= 0 (and the total below 2^62), "
                               "got " +
                               std::to_string(counts[t]));
        if (counts[t] > 0 && !data[t])
          return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                           "data[" + std::to_string(t) + "] is null");
        total += counts[t];
      }
      GRADCOMM_RETURN_IF_ERROR(requireReduction(call, reduction));
      // Refused before the scan below reads the tensors on the host.
      return requireHostTensors(call, "the batched form (use "
                                      "gradcomm_dense_all_reduce_f32 per "
                                      "tensor)");
    }));
    // One agreement for the whole batch: the shapes, and whether any
    // tensor on any rank is not finite (the policy applies to the call).
    bool nonFinite = false;
    if (scanForNonFinite())
      for (int64_t t = 0; t < tensors && !nonFinite; ++t)
        GRADCOMM_RETURN_IF_ERROR(backend().exceedsLimit(
            call, data[t], counts[t], inputLimit(/*summed=*/true), &nonFinite));
    gradcomm_status agreed = checkConsistency(
        call,
        {{"the number of tensors", tensors},
         {"the total element count", total},
         // FNV-1a of the counts, in 62 bits.
         {"the tensors' element counts",
          static_cast<int64_t>(fnv1a(counts, sizeof(int64_t) * tensors) >> 2)},
         {"reduction", reduction}},
        nonFinite);
    if (skippedNonFinite(agreed, opName)) {
      for (int64_t t = 0; t < tensors; ++t)
        std::fill(data[t], data[t] + counts[t], 0.0f);
      return GRADCOMM_OK;
    }
    GRADCOMM_RETURN_IF_ERROR(agreed);

    // Small tensors are packed into buckets; large ones are reduced in
    // place. Everything is started, then waited for: all in flight at once.
    const double start = now();
    std::vector<Bucket> buckets;
    std::vector<Transfer> transfers;
    uint64_t bytes = 0;
    for (int64_t t = 0; t < tensors; ++t) {
      if (counts[t] == 0)
        continue;
      if (counts[t] >= kPackBelow) {
        GRADCOMM_RETURN_IF_ERROR(
            startAllReduceSum(call, data[t], counts[t], transfers));
        bytes += allReduceBytes(sizeof(float) * counts[t], context().size);
        continue;
      }
      if (buckets.empty() ||
          static_cast<int64_t>(buckets.back().staging.size()) + counts[t] >
              kBucketElements)
        buckets.emplace_back();
      Bucket &bucket = buckets.back();
      bucket.members.push_back(t);
      bucket.staging.insert(bucket.staging.end(), data[t], data[t] + counts[t]);
    }
    for (Bucket &bucket : buckets) {
      GRADCOMM_RETURN_IF_ERROR(startAllReduceSum(
          call, bucket.staging.data(),
          static_cast<int64_t>(bucket.staging.size()), transfers));
      bytes +=
          allReduceBytes(sizeof(float) * bucket.staging.size(), context().size);
    }
    for (Transfer &transfer : transfers)
      GRADCOMM_RETURN_IF_ERROR(
          waitYielding(call, transfer, "all-reduce (batch)"));
    // The average: packed tensors are divided in their staging bucket,
    // before the copy back; the others in place.
    const bool average = reduction == GRADCOMM_REDUCE_AVERAGE;
    for (Bucket &bucket : buckets) {
      if (average)
        divideByGroupSize(bucket.staging.data(),
                          static_cast<int64_t>(bucket.staging.size()));
      const float *from = bucket.staging.data();
      for (int64_t t : bucket.members) {
        std::copy(from, from + counts[t], data[t]);
        from += counts[t];
      }
    }
    if (average)
      for (int64_t t = 0; t < tensors; ++t)
        if (counts[t] >= kPackBelow)
          divideByGroupSize(data[t], counts[t]);
    gradcomm_op_stats &stats = opStats(opName);
    stats.calls += 1;
    stats.messages += transfers.size();
    stats.value_bytes_sent += bytes;
    stats.value_bytes_received += bytes;
    stats.seconds += now() - start;
    return GRADCOMM_OK;
  });
}
