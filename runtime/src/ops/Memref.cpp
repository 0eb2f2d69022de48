//===- Memref.cpp - Entry points taking MLIR memref descriptors -----------===//
//
// Part of the GradComm project.
//
// Unpacks descriptors (checking they are contiguous row-major) and forwards
// to the pointer + length entry points, so both ABIs share one
// implementation.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Wire.h"
#include "gradcomm/runtime_memref.h"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

using namespace gradcomm;

namespace {

/// The failure a compiled step recorded (on-error=return), or OK. The
/// step's later runtime calls return it at once: every rank recorded the
/// same status, so every rank skips the same collectives.
gradcomm_status stepFailure() { return context().pendingStepStatus; }

/// A contiguous view of a memref: its first element and element count.
template <typename T> struct View {
  T *data = nullptr;
  int64_t count = 0;
};

/// Reads an unranked descriptor: {T *allocated, T *aligned, int64_t offset,
/// int64_t sizes[rank], int64_t strides[rank]}.
template <typename T>
gradcomm_status unpack(const Call &call, const char *argument,
                       const gradcomm_unranked_memref *memref, View<T> &view) {
  if (!memref || !memref->descriptor)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("memref '") + argument + "' is null");
  if (memref->rank < 0 || memref->rank > 32)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     std::string("memref '") + argument + "' has rank " +
                         std::to_string(memref->rank));
  auto *base = static_cast<char *>(memref->descriptor);
  T *aligned;
  int64_t offset;
  std::memcpy(&aligned, base + sizeof(T *), sizeof(T *));
  std::memcpy(&offset, base + 2 * sizeof(T *), sizeof(int64_t));
  const auto *sizes =
      reinterpret_cast<const int64_t *>(base + 2 * sizeof(T *) + 8);
  const int64_t *strides = sizes + memref->rank;
  int64_t count = 1, expectedStride = 1;
  for (int64_t d = memref->rank - 1; d >= 0; --d) {
    if (sizes[d] < 0)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       std::string("memref '") + argument +
                           "' has a negative size");
    // Dimensions of size 1 may carry any stride.
    if (sizes[d] != 1 && strides[d] != expectedStride)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       std::string("memref '") + argument +
                           "' is not contiguous row-major (dimension " +
                           std::to_string(d) + " has stride " +
                           std::to_string(strides[d]) + ", expected " +
                           std::to_string(expectedStride) +
                           "); copy it into a contiguous buffer first");
    // Overflow-checked: sizes {2^32, 2^32} must not wrap to 0 elements.
    if (__builtin_mul_overflow(count, sizes[d], &count) ||
        count > INT64_MAX / static_cast<int64_t>(sizeof(T)))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       std::string("memref '") + argument +
                           "' has more elements than fit in memory");
    expectedStride *= sizes[d];
  }
  view.data = aligned ? aligned + offset : nullptr;
  view.count = count;
  return GRADCOMM_OK;
}

/// Unpacks a gradient and its same-sized output.
template <typename T>
gradcomm_status
unpackGradAndOut(const Call &call, const gradcomm_unranked_memref *grad,
                 const gradcomm_unranked_memref *out, View<T> &g, View<T> &o) {
  GRADCOMM_RETURN_IF_ERROR(unpack(call, "grad", grad, g));
  GRADCOMM_RETURN_IF_ERROR(unpack(call, "out", out, o));
  if (g.count != o.count)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "'grad' has " + std::to_string(g.count) +
                         " elements, 'out' " + std::to_string(o.count));
  return GRADCOMM_OK;
}

/// The dense all-reduce's buffer, unpacked as one collective step: a bad
/// descriptor on one rank fails every rank. `named`: the op name keys a
/// started call, so it may not be null.
template <typename T>
gradcomm_status unpackDense(const char *operation, const char *opName,
                            const gradcomm_unranked_memref *data, View<T> &view,
                            bool named = false) {
  return guarded(operation, opName, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    return validateCollectively(call, [&] {
      if (named)
        GRADCOMM_RETURN_IF_ERROR(requireName(call, "op name", opName));
      return unpack(call, "data", data, view);
    });
  });
}

/// ScaleCom's gradient and output, unpacked as one collective step.
template <typename T>
gradcomm_status unpackScalecom(const char *operation, const char *state,
                               const gradcomm_unranked_memref *grad,
                               const gradcomm_unranked_memref *out, View<T> &g,
                               View<T> &o) {
  return guarded(operation, state, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    return validateCollectively(
        call, [&] { return unpackGradAndOut(call, grad, out, g, o); });
  });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_f32(
    const char *opName, gradcomm_unranked_memref *data, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  GRADCOMM_RETURN_IF_ERROR(
      unpackDense("dense_all_reduce_f32", opName, data, view));
  return gradcomm_dense_all_reduce_f32(
      opName, view.data, view.count,
      static_cast<gradcomm_reduction>(reduction));
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_f32(const char *state,
                                              gradcomm_unranked_memref *grad,
                                              gradcomm_unranked_memref *out,
                                              int64_t k, int32_t selection,
                                              int64_t chunkSize, float beta,
                                              int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g, o;
  GRADCOMM_RETURN_IF_ERROR(
      unpackScalecom("scalecom_f32", state, grad, out, g, o));
  return gradcomm_scalecom_f32(state, g.data, o.data, g.count, k,
                               static_cast<gradcomm_selection>(selection),
                               chunkSize, beta,
                               static_cast<gradcomm_reduction>(reduction));
}

namespace {

/// The recipe's options from the compiled call's arguments.
gradcomm_scalecom_options
recipeOptions(int64_t k, int32_t selection, int64_t chunkSize, float beta,
              int64_t warmupSteps, float warmupRampFrom, float clip,
              float momentum, int32_t nesterov, int32_t dense) {
  gradcomm_scalecom_options options;
  gradcomm_scalecom_options_init(&options, k);
  options.selection = static_cast<gradcomm_selection>(selection);
  options.chunk_size = chunkSize;
  options.beta = beta;
  options.warmup_steps = warmupSteps;
  options.warmup =
      warmupRampFrom > 0.0f ? GRADCOMM_WARMUP_RAMP : GRADCOMM_WARMUP_DENSE;
  if (warmupRampFrom > 0.0f)
    options.warmup_start_ratio = warmupRampFrom;
  options.clip = clip;
  options.momentum = momentum;
  options.nesterov = nesterov;
  options.dense = dense;
  return options;
}

/// The blocking (`request` null) and started recipe calls of compiled code.
gradcomm_status scalecomRecipe(const char *operation, const char *state,
                               gradcomm_unranked_memref *grad,
                               gradcomm_unranked_memref *out,
                               const gradcomm_scalecom_options &options,
                               int32_t reduction, gradcomm_request *request) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g, o;
  GRADCOMM_RETURN_IF_ERROR(unpackScalecom(operation, state, grad, out, g, o));
  const auto r = static_cast<gradcomm_reduction>(reduction);
  if (!request)
    return gradcomm_scalecom_recipe_f32(state, g.data, o.data, g.count,
                                        &options, r);
  return gradcomm_scalecom_recipe_start_f32(state, g.data, o.data, g.count,
                                            &options, r, request);
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float warmupRampFrom,
    float clip, float momentum, int32_t nesterov, int32_t dense,
    int32_t reduction) {
  return scalecomRecipe("scalecom_recipe_f32", state, grad, out,
                        recipeOptions(k, selection, chunkSize, beta,
                                      warmupSteps, warmupRampFrom, clip,
                                      momentum, nesterov, dense),
                        reduction, nullptr);
}

namespace {

/// The compressed reduce-scatter's options as the compiler has them.
gradcomm_scalecom_options shardedRecipeOptions(int64_t k, int32_t selection,
                                               int64_t chunkSize, float beta,
                                               int64_t warmupSteps, float clip,
                                               float momentum, int32_t nesterov,
                                               int32_t dense) {
  return recipeOptions(k, selection, chunkSize, beta, warmupSteps,
                       /*warmupRampFrom=*/0.0f, clip, momentum, nesterov,
                       dense);
}

/// A reduce-scatter's input and this rank's shard of it, unpacked as one
/// collective step: the shard must hold gradcomm_shard_range's length for
/// this rank in the active group.
template <typename T>
gradcomm_status unpackSharded(const char *operation, const char *name,
                              const gradcomm_unranked_memref *input,
                              const gradcomm_unranked_memref *shard,
                              View<T> &in, View<T> &out) {
  return guarded(operation, name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    return validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(requireName(call, "name", name));
      GRADCOMM_RETURN_IF_ERROR(unpack(call, "input", input, in));
      GRADCOMM_RETURN_IF_ERROR(unpack(call, "shard", shard, out));
      int64_t begin = 0, length = 0;
      GRADCOMM_RETURN_IF_ERROR(gradcomm_shard_range(
          in.count, context().rank, context().size, &begin, &length));
      if (out.count != length)
        return call.fail(
            GRADCOMM_ERR_INVALID_ARGUMENT,
            "'shard' has " + std::to_string(out.count) + " elements; rank " +
                std::to_string(context().rank) + " of " +
                std::to_string(context().size) + " holds " +
                std::to_string(length) + " of the " + std::to_string(in.count));
      return GRADCOMM_OK;
    });
  });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_f32(
    const char *opName, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> in, out;
  GRADCOMM_RETURN_IF_ERROR(
      unpackSharded("reduce_scatter_f32", opName, data, shard, in, out));
  return gradcomm_reduce_scatter_f32(
      opName, in.data, out.data, in.count,
      static_cast<gradcomm_reduction>(reduction));
}

int32_t
_mlir_ciface_gradcomm_rt_all_gather_f32(const char *opName,
                                        gradcomm_unranked_memref *shard,
                                        gradcomm_unranked_memref *data) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> whole, part;
  GRADCOMM_RETURN_IF_ERROR(
      unpackSharded("all_gather_f32", opName, data, shard, whole, part));
  return gradcomm_all_gather_f32(opName, part.data, whole.data, whole.count);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> in, out;
  GRADCOMM_RETURN_IF_ERROR(unpackSharded("scalecom_reduce_scatter_f32", state,
                                         grad, shard, in, out));
  const gradcomm_scalecom_options options =
      shardedRecipeOptions(k, selection, chunkSize, beta, warmupSteps, clip,
                           momentum, nesterov, dense);
  return gradcomm_scalecom_reduce_scatter_recipe_f32(
      state, in.data, out.data, in.count, &options,
      static_cast<gradcomm_reduction>(reduction));
}

namespace {

/// 16-bit tensors of compiled code (bf16 or f16 gradients): widened into
/// float32 for the runtime's float32 entry points with the values
/// travelling in their own 16 bits (gradcomm_wire), and narrowed back.
/// Where the backend keeps its tensors: host memory is converted here into
/// this thread's scratch; a device backend's (compiled code's buffers come
/// from it) is converted by the backend into device scratch allocated for
/// the call (Backend::deviceWiden, deviceNarrow).
class Wide {
public:
  Wide() = default;
  Wide(const Wide &) = delete;
  Wide &operator=(const Wide &) = delete;
  ~Wide() {
    if (device)
      backend().release(device);
  }

  /// `count` float32 values of scratch.
  gradcomm_status reserve(const Call &call, std::vector<float> &hostScratch,
                          int64_t count) {
    if (backend().tensorsOnHost()) {
      hostScratch.resize(count);
      values = hostScratch.data();
      return GRADCOMM_OK;
    }
    GRADCOMM_RETURN_IF_ERROR(backend().allocate(call, count, &device));
    values = device;
    return GRADCOMM_OK;
  }
  float *data() const { return values; }

  gradcomm_status widen(const Call &call, gradcomm_wire wire,
                        const uint16_t *in, int64_t count) const {
    if (backend().tensorsOnHost()) {
      widenFromWire(wire, in, values, count);
      return GRADCOMM_OK;
    }
    return backend().deviceWiden(call, in, values, count, wire);
  }
  gradcomm_status narrow(const Call &call, gradcomm_wire wire, uint16_t *out,
                         int64_t count) const {
    if (backend().tensorsOnHost()) {
      narrowToWire(wire, values, out, count);
      return GRADCOMM_OK;
    }
    return backend().deviceNarrow(call, values, out, count, wire);
  }

private:
  float *values = nullptr;
  float *device = nullptr; // the backend's, released on leaving
};

struct HostScratch {
  std::vector<float> grad, out;
};

HostScratch &hostScratch() {
  static thread_local HostScratch scratch;
  return scratch;
}

/// One collective step: host tensors, or a backend that converts 16 bits
/// on its own memory.
gradcomm_status requireHalfTensors(const char *operation, const char *name) {
  return guarded(operation, name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    return validateCollectively(call, [&] {
      if (backend().narrowsOnDevice())
        return GRADCOMM_OK;
      return requireHostTensors(call, "a 16-bit tensor of compiled code");
    });
  });
}

/// `wide` reserved for `count` values and, with `in`, widened from it.
gradcomm_status prepareWide(const char *operation, const char *name, Wide &wide,
                            std::vector<float> &scratch, gradcomm_wire wire,
                            const uint16_t *in, int64_t count) {
  return guarded(operation, name, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(wide.reserve(call, scratch, count));
    return in ? wide.widen(call, wire, in, count) : GRADCOMM_OK;
  });
}

gradcomm_status narrowWide(const char *operation, const char *name,
                           const Wide &wide, gradcomm_wire wire, uint16_t *out,
                           int64_t count) {
  return guarded(operation, name, [&](const Call &call) {
    return wide.narrow(call, wire, out, count);
  });
}

gradcomm_status denseAllReduce16(const char *operation, const char *opName,
                                 gradcomm_unranked_memref *data,
                                 gradcomm_wire wire, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  GRADCOMM_RETURN_IF_ERROR(requireHalfTensors(operation, opName));
  View<uint16_t> view;
  GRADCOMM_RETURN_IF_ERROR(unpackDense(operation, opName, data, view));
  Wide wide;
  GRADCOMM_RETURN_IF_ERROR(prepareWide(operation, opName, wide,
                                       hostScratch().grad, wire, view.data,
                                       view.count));
  GRADCOMM_RETURN_IF_ERROR(gradcomm_dense_all_reduce_wire_f32(
      opName, wide.data(), view.count, wire,
      static_cast<gradcomm_reduction>(reduction)));
  return narrowWide(operation, opName, wide, wire, view.data, view.count);
}

gradcomm_status scalecomRecipe16(const char *operation, const char *state,
                                 gradcomm_unranked_memref *grad,
                                 gradcomm_unranked_memref *out,
                                 gradcomm_scalecom_options options,
                                 gradcomm_wire wire, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  GRADCOMM_RETURN_IF_ERROR(requireHalfTensors(operation, state));
  View<uint16_t> g, o;
  GRADCOMM_RETURN_IF_ERROR(unpackScalecom(operation, state, grad, out, g, o));
  Wide wideGrad, wideOut;
  GRADCOMM_RETURN_IF_ERROR(prepareWide(
      operation, state, wideGrad, hostScratch().grad, wire, g.data, g.count));
  GRADCOMM_RETURN_IF_ERROR(prepareWide(
      operation, state, wideOut, hostScratch().out, wire, nullptr, o.count));
  options.wire = wire;
  GRADCOMM_RETURN_IF_ERROR(gradcomm_scalecom_recipe_f32(
      state, wideGrad.data(), wideOut.data(), g.count, &options,
      static_cast<gradcomm_reduction>(reduction)));
  return narrowWide(operation, state, wideOut, wire, o.data, o.count);
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_bf16(
    const char *opName, gradcomm_unranked_memref *data, int32_t reduction) {
  return denseAllReduce16("dense_all_reduce_bf16", opName, data,
                          GRADCOMM_WIRE_BF16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_f16(
    const char *opName, gradcomm_unranked_memref *data, int32_t reduction) {
  return denseAllReduce16("dense_all_reduce_f16", opName, data,
                          GRADCOMM_WIRE_F16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float warmupRampFrom,
    float clip, float momentum, int32_t nesterov, int32_t dense,
    int32_t reduction) {
  return scalecomRecipe16("scalecom_recipe_bf16", state, grad, out,
                          recipeOptions(k, selection, chunkSize, beta,
                                        warmupSteps, warmupRampFrom, clip,
                                        momentum, nesterov, dense),
                          GRADCOMM_WIRE_BF16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float warmupRampFrom,
    float clip, float momentum, int32_t nesterov, int32_t dense,
    int32_t reduction) {
  return scalecomRecipe16("scalecom_recipe_f16", state, grad, out,
                          recipeOptions(k, selection, chunkSize, beta,
                                        warmupSteps, warmupRampFrom, clip,
                                        momentum, nesterov, dense),
                          GRADCOMM_WIRE_F16, reduction);
}

namespace {

/// A 16-bit sharded collective of compiled code: the whole tensor (`whole`)
/// and this rank's shard (`part`) widened into float32 scratch, `run` (a
/// float32 entry point with the values travelling as `wire`) on the
/// scratch, and what it wrote (`part` for a reduce-scatter, `whole` for an
/// all-gather) narrowed back.
template <typename Run>
gradcomm_status sharded16(const char *operation, const char *name,
                          gradcomm_unranked_memref *whole,
                          gradcomm_unranked_memref *part, bool gather,
                          gradcomm_wire wire, Run run) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  GRADCOMM_RETURN_IF_ERROR(requireHalfTensors(operation, name));
  View<uint16_t> in, out;
  GRADCOMM_RETURN_IF_ERROR(
      unpackSharded(operation, name, whole, part, in, out));
  // A reduce-scatter reads the whole tensor and writes the shard; an
  // all-gather the other way round.
  Wide wideWhole, widePart;
  GRADCOMM_RETURN_IF_ERROR(prepareWide(operation, name, wideWhole,
                                       hostScratch().grad, wire,
                                       gather ? nullptr : in.data, in.count));
  GRADCOMM_RETURN_IF_ERROR(prepareWide(operation, name, widePart,
                                       hostScratch().out, wire,
                                       gather ? out.data : nullptr, out.count));
  GRADCOMM_RETURN_IF_ERROR(run(wideWhole.data(), widePart.data(), in.count));
  return gather
             ? narrowWide(operation, name, wideWhole, wire, in.data, in.count)
             : narrowWide(operation, name, widePart, wire, out.data, out.count);
}

gradcomm_status reduceScatter16(const char *operation, const char *opName,
                                gradcomm_unranked_memref *data,
                                gradcomm_unranked_memref *shard,
                                gradcomm_wire wire, int32_t reduction) {
  return sharded16(operation, opName, data, shard, /*gather=*/false, wire,
                   [&](const float *in, float *out, int64_t count) {
                     return gradcomm_reduce_scatter_wire_f32(
                         opName, in, out, count, wire,
                         static_cast<gradcomm_reduction>(reduction));
                   });
}

gradcomm_status allGather16(const char *operation, const char *opName,
                            gradcomm_unranked_memref *shard,
                            gradcomm_unranked_memref *data,
                            gradcomm_wire wire) {
  return sharded16(operation, opName, data, shard, /*gather=*/true, wire,
                   [&](float *whole, const float *part, int64_t count) {
                     return gradcomm_all_gather_wire_f32(opName, part, whole,
                                                         count, wire);
                   });
}

gradcomm_status scalecomReduceScatter16(const char *operation,
                                        const char *state,
                                        gradcomm_unranked_memref *grad,
                                        gradcomm_unranked_memref *shard,
                                        gradcomm_scalecom_options options,
                                        gradcomm_wire wire, int32_t reduction) {
  options.wire = wire;
  return sharded16(operation, state, grad, shard, /*gather=*/false, wire,
                   [&](const float *in, float *out, int64_t count) {
                     return gradcomm_scalecom_reduce_scatter_recipe_f32(
                         state, in, out, count, &options,
                         static_cast<gradcomm_reduction>(reduction));
                   });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_bf16(
    const char *opName, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction) {
  return reduceScatter16("reduce_scatter_bf16", opName, data, shard,
                         GRADCOMM_WIRE_BF16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_reduce_scatter_f16(
    const char *opName, gradcomm_unranked_memref *data,
    gradcomm_unranked_memref *shard, int32_t reduction) {
  return reduceScatter16("reduce_scatter_f16", opName, data, shard,
                         GRADCOMM_WIRE_F16, reduction);
}

int32_t
_mlir_ciface_gradcomm_rt_all_gather_bf16(const char *opName,
                                         gradcomm_unranked_memref *shard,
                                         gradcomm_unranked_memref *data) {
  return allGather16("all_gather_bf16", opName, shard, data,
                     GRADCOMM_WIRE_BF16);
}

int32_t
_mlir_ciface_gradcomm_rt_all_gather_f16(const char *opName,
                                        gradcomm_unranked_memref *shard,
                                        gradcomm_unranked_memref *data) {
  return allGather16("all_gather_f16", opName, shard, data, GRADCOMM_WIRE_F16);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction) {
  return scalecomReduceScatter16(
      "scalecom_reduce_scatter_bf16", state, grad, shard,
      shardedRecipeOptions(k, selection, chunkSize, beta, warmupSteps, clip,
                           momentum, nesterov, dense),
      GRADCOMM_WIRE_BF16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_reduce_scatter_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *shard, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float clip,
    float momentum, int32_t nesterov, int32_t dense, int32_t reduction) {
  return scalecomReduceScatter16(
      "scalecom_reduce_scatter_f16", state, grad, shard,
      shardedRecipeOptions(k, selection, chunkSize, beta, warmupSteps, clip,
                           momentum, nesterov, dense),
      GRADCOMM_WIRE_F16, reduction);
}

namespace {

/// The started calls of compiled code, by op (dense) or state (ScaleCom)
/// name, until gradcomm_rt_wait_f32.
std::map<std::string, gradcomm_request> &compiledRequests() {
  static std::map<std::string, gradcomm_request> requests;
  return requests;
}

/// Keeps `request` under `name` for the wait.
gradcomm_status keepRequest(const char *operation, const char *name,
                            gradcomm_request request) {
  if (compiledRequests().emplace(name, request).second)
    return GRADCOMM_OK;
  gradcomm_wait(&request);
  return guarded(operation, name, [&](const Call &call) {
    return call.fail(GRADCOMM_ERR_INTERNAL,
                     "started again before its wait (the compiled step "
                     "starts each op once per wait)");
  });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_dense_all_reduce_start_f32(
    const char *opName, gradcomm_unranked_memref *data, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  GRADCOMM_RETURN_IF_ERROR(unpackDense("dense_all_reduce_start_f32", opName,
                                       data, view, /*named=*/true));
  gradcomm_request request = nullptr;
  GRADCOMM_RETURN_IF_ERROR(gradcomm_dense_all_reduce_start_f32(
      opName, view.data, view.count, static_cast<gradcomm_reduction>(reduction),
      &request));
  return keepRequest("dense_all_reduce_start_f32", opName, request);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_start_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g, o;
  GRADCOMM_RETURN_IF_ERROR(
      unpackScalecom("scalecom_start_f32", state, grad, out, g, o));
  gradcomm_request request = nullptr;
  GRADCOMM_RETURN_IF_ERROR(gradcomm_scalecom_start_f32(
      state, g.data, o.data, g.count, k,
      static_cast<gradcomm_selection>(selection), chunkSize, beta,
      static_cast<gradcomm_reduction>(reduction), &request));
  return keepRequest("scalecom_start_f32", state, request);
}

int32_t _mlir_ciface_gradcomm_rt_scalecom_recipe_start_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t selection,
    int64_t chunkSize, float beta, int64_t warmupSteps, float warmupRampFrom,
    float clip, float momentum, int32_t nesterov, int32_t dense,
    int32_t reduction) {
  gradcomm_request request = nullptr;
  GRADCOMM_RETURN_IF_ERROR(scalecomRecipe(
      "scalecom_recipe_start_f32", state, grad, out,
      recipeOptions(k, selection, chunkSize, beta, warmupSteps, warmupRampFrom,
                    clip, momentum, nesterov, dense),
      reduction, &request));
  return keepRequest("scalecom_recipe_start_f32", state, request);
}

int32_t _mlir_ciface_gradcomm_rt_wait_f32(const char *name,
                                          gradcomm_unranked_memref *buffer) {
  (void)buffer; // Only keeps the buffer alive (and ordered) to here.
  auto it = name ? compiledRequests().find(name) : compiledRequests().end();
  if (it == compiledRequests().end()) {
    // A failed step started nothing after its failure.
    if (gradcomm_status failed = stepFailure())
      return failed;
    return guarded("wait", name, [&](const Call &call) {
      return call.fail(GRADCOMM_ERR_INTERNAL,
                       "nothing was started under this name");
    });
  }
  gradcomm_request request = it->second;
  compiledRequests().erase(it);
  // A started call always completes, even in a step that failed since.
  gradcomm_status waited = gradcomm_wait(&request);
  if (gradcomm_status failed = stepFailure())
    return failed;
  return waited;
}

int32_t _mlir_ciface_gradcomm_rt_cltk_compress_f32(
    const char *state, gradcomm_unranked_memref *grad, int64_t k,
    int32_t selection, int64_t chunkSize, gradcomm_unranked_memref *values,
    gradcomm_unranked_memref *indices) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g, v;
  View<int64_t> i;
  gradcomm_status status =
      guarded("cltk_compress_f32", state, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
        // A bad descriptor on one rank fails every rank.
        return validateCollectively(call, [&] {
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "grad", grad, g));
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "values", values, v));
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "indices", indices, i));
          if (v.count != k || i.count != k)
            return call.fail(
                GRADCOMM_ERR_INVALID_ARGUMENT,
                "'values' and 'indices' must hold k = " + std::to_string(k) +
                    " elements, got " + std::to_string(v.count) + " and " +
                    std::to_string(i.count));
          return GRADCOMM_OK;
        });
      });
  if (status != GRADCOMM_OK)
    return status;
  return gradcomm_cltk_compress_f32(state, g.data, g.count, k,
                                    static_cast<gradcomm_selection>(selection),
                                    chunkSize, v.data, i.data);
}

int32_t _mlir_ciface_gradcomm_rt_sparse_all_reduce_f32(
    const char *opName, gradcomm_unranked_memref *values,
    gradcomm_unranked_memref *indices, gradcomm_unranked_memref *out,
    int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> v, o;
  View<int64_t> i;
  gradcomm_status status =
      guarded("sparse_all_reduce_f32", opName, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
        // A bad descriptor on one rank fails every rank.
        return validateCollectively(call, [&] {
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "values", values, v));
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "indices", indices, i));
          GRADCOMM_RETURN_IF_ERROR(unpack(call, "out", out, o));
          if (v.count != i.count)
            return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                             "'values' has " + std::to_string(v.count) +
                                 " elements, 'indices' " +
                                 std::to_string(i.count));
          return GRADCOMM_OK;
        });
      });
  if (status != GRADCOMM_OK)
    return status;
  return gradcomm_sparse_all_reduce_f32(
      opName, v.data, i.data, v.count, o.data, o.count,
      static_cast<gradcomm_reduction>(reduction));
}

int32_t _mlir_ciface_gradcomm_rt_memory_update_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *indices, float beta) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g;
  View<int64_t> i;
  gradcomm_status status =
      guarded("memory_update_f32", state, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(unpack(call, "grad", grad, g));
        GRADCOMM_RETURN_IF_ERROR(unpack(call, "indices", indices, i));
        return GRADCOMM_OK;
      });
  if (status != GRADCOMM_OK)
    return status;
  return gradcomm_memory_update_f32(state, g.data, g.count, i.data, i.count,
                                    beta);
}

int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_f32(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> g, o;
  gradcomm_status status =
      guarded("local_topk_all_gather_f32", state, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
        // A bad descriptor on one rank fails every rank.
        return validateCollectively(
            call, [&] { return unpackGradAndOut(call, grad, out, g, o); });
      });
  if (status != GRADCOMM_OK)
    return status;
  return gradcomm_local_topk_all_gather_f32(
      state, g.data, o.data, g.count, k,
      static_cast<gradcomm_reduction>(reduction), nullptr);
}

namespace {

/// The view of a replica `x` (validated on every rank), for the exchange
/// ops; also refuses a negative seed.
template <typename T>
gradcomm_status unpackReplica(const char *operation, const char *state,
                              gradcomm_unranked_memref *x, int64_t seed,
                              View<T> &view) {
  return guarded(operation, state, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    // A bad descriptor on one rank fails every rank.
    return validateCollectively(call, [&] {
      GRADCOMM_RETURN_IF_ERROR(unpack(call, "x", x, view));
      if (seed < 0)
        return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                         "'seed' must be >= 0, got " + std::to_string(seed));
      return GRADCOMM_OK;
    });
  });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_f32(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  if (gradcomm_status status =
          unpackReplica("gossip_exchange_f32", state, x, seed, view))
    return status;
  return gradcomm_gossip_exchange_f32(
      state, view.data, view.count, static_cast<gradcomm_schedule>(schedule),
      mixing, static_cast<uint64_t>(seed), period);
}

int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_start_f32(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  if (gradcomm_status status =
          unpackReplica("gossip_exchange_start_f32", state, x, seed, view))
    return status;
  gradcomm_request request = nullptr;
  GRADCOMM_RETURN_IF_ERROR(gradcomm_gossip_exchange_start_f32(
      state, view.data, view.count, static_cast<gradcomm_schedule>(schedule),
      mixing, static_cast<uint64_t>(seed), period, &request));
  return keepRequest("gossip_exchange_start_f32", state, request);
}

namespace {

gradcomm_status localTopk16(const char *operation, const char *state,
                            gradcomm_unranked_memref *grad,
                            gradcomm_unranked_memref *out, int64_t k,
                            gradcomm_wire wire, int32_t reduction) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  GRADCOMM_RETURN_IF_ERROR(requireHalfTensors(operation, state));
  View<uint16_t> g, o;
  GRADCOMM_RETURN_IF_ERROR(guarded(operation, state, [&](const Call &call) {
    return validateCollectively(
        call, [&] { return unpackGradAndOut(call, grad, out, g, o); });
  }));
  Wide wideGrad, wideOut;
  GRADCOMM_RETURN_IF_ERROR(prepareWide(
      operation, state, wideGrad, hostScratch().grad, wire, g.data, g.count));
  GRADCOMM_RETURN_IF_ERROR(prepareWide(
      operation, state, wideOut, hostScratch().out, wire, nullptr, o.count));
  GRADCOMM_RETURN_IF_ERROR(gradcomm_local_topk_all_gather_wire_f32(
      state, wideGrad.data(), wideOut.data(), g.count, k, wire,
      static_cast<gradcomm_reduction>(reduction), nullptr));
  return narrowWide(operation, state, wideOut, wire, o.data, o.count);
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_bf16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction) {
  return localTopk16("local_topk_all_gather_bf16", state, grad, out, k,
                     GRADCOMM_WIRE_BF16, reduction);
}

int32_t _mlir_ciface_gradcomm_rt_local_topk_all_gather_f16(
    const char *state, gradcomm_unranked_memref *grad,
    gradcomm_unranked_memref *out, int64_t k, int32_t reduction) {
  return localTopk16("local_topk_all_gather_f16", state, grad, out, k,
                     GRADCOMM_WIRE_F16, reduction);
}

namespace {

/// A 16-bit replica of compiled code through the float32 entry point
/// `exchange(x, count)`: widened into scratch, its values travelling in
/// their own 16 bits (`wire`), narrowed back.
template <typename Exchange>
gradcomm_status exchange16(const char *operation, const char *state,
                           gradcomm_unranked_memref *x, int64_t seed,
                           gradcomm_wire wire, Exchange exchange) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  GRADCOMM_RETURN_IF_ERROR(requireHalfTensors(operation, state));
  View<uint16_t> view;
  GRADCOMM_RETURN_IF_ERROR(unpackReplica(operation, state, x, seed, view));
  Wide wide;
  GRADCOMM_RETURN_IF_ERROR(prepareWide(
      operation, state, wide, hostScratch().grad, wire, view.data, view.count));
  GRADCOMM_RETURN_IF_ERROR(exchange(wide.data(), view.count));
  return narrowWide(operation, state, wide, wire, view.data, view.count);
}

gradcomm_status gossip16(const char *operation, const char *state,
                         gradcomm_unranked_memref *x, int32_t schedule,
                         float mixing, int64_t seed, int64_t period,
                         gradcomm_wire wire) {
  return exchange16(
      operation, state, x, seed, wire, [&](float *data, int64_t count) {
        return gradcomm_gossip_exchange_wire_f32(
            state, data, count, static_cast<gradcomm_schedule>(schedule),
            mixing, static_cast<uint64_t>(seed), period, wire);
      });
}

gradcomm_status elasticAverage16(const char *operation, const char *state,
                                 gradcomm_unranked_memref *x, float alpha,
                                 int64_t period, gradcomm_wire wire) {
  return exchange16(operation, state, x, /*seed=*/0, wire,
                    [&](float *data, int64_t count) {
                      return gradcomm_elastic_average_wire_f32(
                          state, data, count, alpha, period, wire);
                    });
}

} // namespace

int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_bf16(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period) {
  return gossip16("gossip_exchange_bf16", state, x, schedule, mixing, seed,
                  period, GRADCOMM_WIRE_BF16);
}

int32_t _mlir_ciface_gradcomm_rt_gossip_exchange_f16(
    const char *state, gradcomm_unranked_memref *x, int32_t schedule,
    float mixing, int64_t seed, int64_t period) {
  return gossip16("gossip_exchange_f16", state, x, schedule, mixing, seed,
                  period, GRADCOMM_WIRE_F16);
}

int32_t
_mlir_ciface_gradcomm_rt_elastic_average_bf16(const char *state,
                                              gradcomm_unranked_memref *x,
                                              float alpha, int64_t period) {
  return elasticAverage16("elastic_average_bf16", state, x, alpha, period,
                          GRADCOMM_WIRE_BF16);
}

int32_t
_mlir_ciface_gradcomm_rt_elastic_average_f16(const char *state,
                                             gradcomm_unranked_memref *x,
                                             float alpha, int64_t period) {
  return elasticAverage16("elastic_average_f16", state, x, alpha, period,
                          GRADCOMM_WIRE_F16);
}

int32_t _mlir_ciface_gradcomm_rt_gossip_async_f32(const char *state,
                                                  gradcomm_unranked_memref *x,
                                                  int32_t schedule,
                                                  float mixing, int64_t seed,
                                                  int64_t period) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  if (gradcomm_status status =
          unpackReplica("gossip_async_f32", state, x, seed, view))
    return status;
  return gradcomm_gossip_async_f32(state, view.data, view.count,
                                   static_cast<gradcomm_schedule>(schedule),
                                   mixing, static_cast<uint64_t>(seed), period);
}

namespace {

/// The elastic averages' memref form: `operation` names the call in errors,
/// `average` is the runtime entry point.
using ElasticAverageFn = gradcomm_status (*)(const char *, float *, int64_t,
                                             float, int64_t);
int32_t elasticAverage(const char *operation, ElasticAverageFn average,
                       const char *state, gradcomm_unranked_memref *x,
                       float alpha, int64_t period) {
  if (gradcomm_status failed = stepFailure())
    return failed;
  View<float> view;
  if (gradcomm_status status = unpackReplica(operation, state, x, 0, view))
    return status;
  return average(state, view.data, view.count, alpha, period);
}

/// The started elastic average, its request kept under the state's name
/// until gradcomm_rt_wait_f32.
gradcomm_status startElasticAverage(const char *state, float *x, int64_t count,
                                    float alpha, int64_t period) {
  gradcomm_request request = nullptr;
  GRADCOMM_RETURN_IF_ERROR(gradcomm_elastic_average_start_f32(
      state, x, count, alpha, period, &request));
  return keepRequest("elastic_average_start_f32", state, request);
}

} // namespace

int32_t
_mlir_ciface_gradcomm_rt_elastic_average_f32(const char *state,
                                             gradcomm_unranked_memref *x,
                                             float alpha, int64_t period) {
  return elasticAverage("elastic_average_f32", gradcomm_elastic_average_f32,
                        state, x, alpha, period);
}

int32_t _mlir_ciface_gradcomm_rt_elastic_average_start_f32(
    const char *state, gradcomm_unranked_memref *x, float alpha,
    int64_t period) {
  return elasticAverage("elastic_average_start_f32", startElasticAverage, state,
                        x, alpha, period);
}

int32_t _mlir_ciface_gradcomm_rt_elastic_average_async_f32(
    const char *state, gradcomm_unranked_memref *x, float alpha,
    int64_t period) {
  return elasticAverage("elastic_average_async_f32",
                        gradcomm_elastic_average_async_f32, state, x, alpha,
                        period);
}

int32_t _mlir_ciface_gradcomm_rt_elastic_average_sharded_f32(
    const char *state, gradcomm_unranked_memref *x, float alpha,
    int64_t period) {
  return elasticAverage("elastic_average_sharded_f32",
                        gradcomm_elastic_average_sharded_f32, state, x, alpha,
                        period);
}

//===----------------------------------------------------------------------===//
// Helpers generated code calls
//===----------------------------------------------------------------------===//

void gradcomm_rt_check(int32_t status) {
  if (status == GRADCOMM_OK)
    return;
  abortJob(gradcomm_last_error(), status);
}

int32_t gradcomm_rt_step_ok(void) {
  return context().pendingStepStatus == GRADCOMM_OK;
}

void gradcomm_rt_record(int32_t status) {
  // The first failure of the step is the one to report: later calls of a
  // failed step do not run (the code is guarded), but keep it first anyway.
  Context &ctx = context();
  if (status != GRADCOMM_OK && ctx.pendingStepStatus == GRADCOMM_OK)
    ctx.pendingStepStatus = static_cast<gradcomm_status>(status);
}

void gradcomm_rt_expect_group_size(int64_t expected) {
  gradcomm_rt_check(
      guarded("expect_group_size", nullptr, [&](const Call &call) {
        GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
        if (context().world.size != expected)
          return call.fail(GRADCOMM_ERR_MISMATCH,
                           "the step was compiled for a grid of " +
                               std::to_string(expected) +
                               " processes but runs on " +
                               std::to_string(context().world.size) +
                               "; recompile for this grid or launch " +
                               std::to_string(expected) + " ranks");
        return GRADCOMM_OK;
      }));
}

int64_t gradcomm_rt_rank(void) {
  int rank = 0;
  gradcomm_rt_check(gradcomm_rank(&rank));
  return rank;
}

int64_t gradcomm_rt_size(void) {
  int size = 0;
  gradcomm_rt_check(gradcomm_size(&size));
  return size;
}

//===----------------------------------------------------------------------===//
// Allocation for compiled code
//===----------------------------------------------------------------------===//

namespace {

/// Buffers handed out to compiled code by a backend whose tensors are not
/// host memory, with that backend, so a free finds it even if the trainer
/// frees after switching. Compiled steps may allocate and free on several
/// threads at once (a trainer's threads, the ctypes runner, which releases
/// the GIL), so the map is guarded; `live` lets the host path, where it
/// stays empty, skip the lock on every free.
class BackendBuffers {
public:
  void add(void *memory, const Backend *owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    owners_.emplace(memory, owner);
    live_.fetch_add(1, std::memory_order_release);
  }

  /// The backend that allocated `memory`, forgotten now; null for host
  /// memory.
  const Backend *take(void *memory) {
    if (live_.load(std::memory_order_acquire) == 0)
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = owners_.find(memory);
    if (it == owners_.end())
      return nullptr;
    const Backend *owner = it->second;
    owners_.erase(it);
    live_.fetch_sub(1, std::memory_order_release);
    return owner;
  }

  bool contains(void *memory) {
    if (live_.load(std::memory_order_acquire) == 0)
      return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return owners_.count(memory) != 0;
  }

private:
  std::mutex mutex_;
  std::map<void *, const Backend *> owners_;
  std::atomic<size_t> live_{0};
};

BackendBuffers &backendBuffers() {
  static BackendBuffers buffers;
  return buffers;
}

void *allocateForCompiledCode(size_t alignment, size_t size) {
  if (context().initialized && !backend().tensorsOnHost()) {
    const Backend &selected = backend();
    // Device allocations (cudaMalloc) align to at least 256 bytes.
    if (alignment > 256) {
      std::fprintf(stderr,
                   "gradcomm: device allocation of %zu bytes aligned to %zu "
                   "failed: the %s backend aligns to 256\n",
                   size, alignment, selected.name());
      return nullptr;
    }
    Call call("alloc", nullptr);
    float *memory = nullptr;
    if (selected.allocate(call, static_cast<int64_t>((size + 3) / 4),
                          &memory) != GRADCOMM_OK) {
      std::fprintf(stderr, "%s\n", gradcomm_last_error());
      return nullptr;
    }
    backendBuffers().add(memory, &selected);
    return memory;
  }
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  return alignment <= alignof(std::max_align_t)
             ? std::malloc(size)
             : std::aligned_alloc(alignment, rounded);
}

} // namespace

void *gradcomm_memref_alloc(size_t size) {
  return allocateForCompiledCode(alignof(std::max_align_t), size);
}

void *gradcomm_memref_aligned_alloc(size_t alignment, size_t size) {
  return allocateForCompiledCode(alignment, size);
}

void gradcomm_memref_free(void *pointer) {
  if (!pointer)
    return;
  const Backend *owner = backendBuffers().take(pointer);
  if (!owner) {
    std::free(pointer);
    return;
  }
  owner->release(static_cast<float *>(pointer));
}

void gradcomm_free_buffer(void *allocated) { gradcomm_memref_free(allocated); }

namespace {

/// The ranked descriptor behind an unranked one: {allocated, aligned,
/// offset, sizes[rank], strides[rank]}.
struct StridedView {
  char *base;
  const int64_t *sizes;
  const int64_t *strides;
};

StridedView stridedView(const gradcomm_unranked_memref *memref,
                        int64_t elementSize) {
  auto *words = static_cast<int64_t *>(memref->descriptor);
  char *aligned = reinterpret_cast<char *>(words[1]);
  return {aligned + words[2] * elementSize, words + 3,
          words + 3 + memref->rank};
}

/// Copies dimension `d` onward; the innermost dimension is one memcpy when
/// both sides are contiguous in it.
void copyStrided(const StridedView &from, const StridedView &to, int64_t rank,
                 int64_t d, int64_t elementSize, int64_t fromOffset,
                 int64_t toOffset) {
  int64_t size = from.sizes[d];
  if (d == rank - 1 && from.strides[d] == 1 && to.strides[d] == 1) {
    std::memcpy(to.base + toOffset * elementSize,
                from.base + fromOffset * elementSize,
                static_cast<size_t>(size * elementSize));
    return;
  }
  for (int64_t i = 0; i < size; ++i) {
    int64_t fromAt = fromOffset + i * from.strides[d];
    int64_t toAt = toOffset + i * to.strides[d];
    if (d == rank - 1)
      std::memcpy(to.base + toAt * elementSize,
                  from.base + fromAt * elementSize,
                  static_cast<size_t>(elementSize));
    else
      copyStrided(from, to, rank, d + 1, elementSize, fromAt, toAt);
  }
}

bool isDeviceBuffer(const gradcomm_unranked_memref *memref) {
  void *allocated =
      reinterpret_cast<void *>(static_cast<int64_t *>(memref->descriptor)[0]);
  return backendBuffers().contains(allocated);
}

} // namespace

void gradcomm_memref_copy(int64_t element_size,
                          gradcomm_unranked_memref *source,
                          gradcomm_unranked_memref *destination) {
  int64_t rank = source->rank;
  StridedView from = stridedView(source, element_size);
  StridedView to = stridedView(destination, element_size);
  if (isDeviceBuffer(source) || isDeviceBuffer(destination)) {
    std::fprintf(stderr,
                 "gradcomm: gradcomm_memref_copy: strided copies of device "
                 "buffers are not supported (CUDA backend)\n");
    std::abort();
  }
  for (int64_t d = 0; d < rank; ++d)
    if (from.sizes[d] == 0)
      return;
  if (rank == 0) {
    std::memcpy(to.base, from.base, static_cast<size_t>(element_size));
    return;
  }
  copyStrided(from, to, rank, 0, element_size, 0, 0);
}
