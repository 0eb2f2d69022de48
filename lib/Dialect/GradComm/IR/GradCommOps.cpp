//===- GradCommOps.cpp - GradComm operations and verifiers ----------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gradcomm;

#include "gradcomm/Dialect/GradComm/IR/GradCommEnums.cpp.inc"

#define GET_OP_CLASSES
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

/// Gradients, memories and gossiped tensors: statically shaped f32 tensors.
/// `allowHalf`: the gradients of ScaleCom's fused step may also be bf16 or
/// f16 (their values travel in 16 bits; the memory stays f32); the other
/// ops and the memory are f32 only.
static LogicalResult verifyDenseType(Operation *op, StringRef field, Type type,
                                     bool allowHalf = false) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitOpError()
           << "'" << field << "' must be a statically shaped tensor, got "
           << type;
  Type element = tensor.getElementType();
  if (allowHalf && (element.isF32() || element.isBF16() || element.isF16()))
    return success();
  if (!element.isF32())
    return op->emitOpError()
           << "'" << field
           << (allowHalf ? "' must have f32, bf16 or f16 elements, got "
                         : "' must have f32 elements (f16/bf16 are not "
                           "supported), got ")
           << type;
  return success();
}

/// The memory a state serving a gradient of `type` holds: f32 of its shape.
static Type memoryTypeFor(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(Float32Type::get(type.getContext()));
}

/// A 1-D tensor of `elementType`; `length` is checked when given.
static LogicalResult verifyVectorType(Operation *op, StringRef field, Type type,
                                      Type elementType,
                                      std::optional<int64_t> length) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 1 || !tensor.hasStaticShape() ||
      tensor.getElementType() != elementType)
    return op->emitOpError()
           << "'" << field << "' must be a static 1-D tensor of " << elementType
           << ", got " << type;
  if (length && tensor.getDimSize(0) != *length)
    return op->emitOpError() << "'" << field << "' must have " << *length
                             << " elements (k), got " << type;
  return success();
}

/// k must lie in [1, N] where N is the element count of the dense tensor.
static LogicalResult verifyK(Operation *op, int64_t k, Type denseType) {
  int64_t numElements = cast<RankedTensorType>(denseType).getNumElements();
  if (k < 1 || k > numElements)
    return op->emitOpError() << "'k' must be in [1, " << numElements
                             << "] (the element count), got " << k;
  return success();
}

/// Checks the grid symbol and the axes, the way upstream shard collectives
/// name their group. Returns the group size (kDynamic if unknown).
static FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr grid,
                                      ArrayRef<int16_t> axes,
                                      SymbolTableCollection &symbolTables) {
  shard::GridOp gridOp = shard::getGridOrNull(op, grid, symbolTables);
  if (!gridOp)
    return op->emitOpError()
           << "'grid' refers to " << grid << ", which is not a shard.grid";
  if (axes.empty())
    return op->emitOpError() << "'grid_axes' must name at least one axis";
  llvm::SmallSet<int16_t, 4> seen;
  for (int16_t axis : axes) {
    if (axis < 0 || axis >= gridOp.getRank())
      return op->emitOpError()
             << "'grid_axes' axis " << axis << " is out of range for grid "
             << grid << " of rank " << gridOp.getRank();
    if (!seen.insert(axis).second)
      return op->emitOpError() << "'grid_axes' names axis " << axis << " twice";
  }
  return shard::collectiveProcessGroupSize(axes, gridOp.getShape());
}

/// Looks up `state` and checks that it is a gradcomm.state whose memory
/// matches `denseType` (or that it has no memory, for counter-only users).
static LogicalResult verifyState(Operation *op, FlatSymbolRefAttr state,
                                 Type denseType,
                                 SymbolTableCollection &symbolTables) {
  auto stateOp = symbolTables.lookupNearestSymbolFrom<StateOp>(op, state);
  if (!stateOp)
    return op->emitOpError() << "'state' refers to " << state
                             << ", which is not a gradcomm.state";
  if (!denseType) {
    if (stateOp.hasMemory())
      return op->emitOpError()
             << "'state' " << state
             << " must be a counter-only state (no memory type), got memory "
             << stateOp.getMemoryTensorType();
    return success();
  }
  if (!stateOp.hasMemory())
    return op->emitOpError()
           << "'state' " << state << " has no memory; expected memory of type "
           << denseType;
  if (stateOp.getMemoryTensorType() != memoryTypeFor(denseType))
    return op->emitOpError() << "'state' " << state << " has memory type "
                             << stateOp.getMemoryTensorType()
                             << ", which does not match the tensor type "
                             << memoryTypeFor(denseType);
  return success();
}

//===----------------------------------------------------------------------===//
// StateOp
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  if (!hasMemory())
    return success();
  return verifyDenseType(*this, "memory_type", getMemoryTensorType());
}

//===----------------------------------------------------------------------===//
// CltkCompressOp
//===----------------------------------------------------------------------===//

LogicalResult CltkCompressOp::verify() {
  Type inputType = getInput().getType();
  if (failed(verifyDenseType(*this, "input", inputType, /*allowHalf=*/true)) ||
      failed(verifyK(*this, getKAttr().getInt(), inputType)))
    return failure();
  Builder b(getContext());
  int64_t k = getKAttr().getInt();
  if (failed(verifyVectorType(*this, "values", getValues().getType(),
                              b.getF32Type(), k)) ||
      failed(verifyVectorType(*this, "indices", getIndices().getType(),
                              b.getI64Type(), k)))
    return failure();

  if (IntegerAttr warmup = getWarmupStepsAttr(); warmup && warmup.getInt() < 0)
    return emitOpError() << "'warmup_steps' must be >= 0, got "
                         << warmup.getInt();
  if (FloatAttr ramp = getWarmupRampFromAttr()) {
    if (!(ramp.getValueAsDouble() >= 1.0))
      return emitOpError() << "'warmup_ramp_from' must be >= 1, got "
                           << ramp.getValueAsDouble();
    if (!getWarmupStepsAttr())
      return emitOpError("'warmup_ramp_from' needs 'warmup_steps'");
    if (getSelection() != Selection::Exact)
      return emitOpError("a ramp warm-up ('warmup_ramp_from') needs "
                         "selection = exact");
  }
  if (FloatAttr clip = getClipAttr();
      clip && !(clip.getValueAsDouble() > 0.0 &&
                std::isfinite(clip.getValueAsDouble())))
    return emitOpError() << "'clip' must be finite and > 0, got "
                         << clip.getValueAsDouble();
  if (FloatAttr momentum = getMomentumAttr();
      momentum &&
      !(momentum.getValueAsDouble() > 0.0 && momentum.getValueAsDouble() < 1.0))
    return emitOpError() << "'momentum' must be in (0, 1), got "
                         << momentum.getValueAsDouble();
  if (getNesterov() && !getMomentumAttr())
    return emitOpError("'nesterov' needs 'momentum'");

  std::optional<int64_t> chunkSize;
  if (IntegerAttr chunkSizeAttr = getChunkSizeAttr())
    chunkSize = chunkSizeAttr.getInt();
  if (getSelection() == Selection::Exact) {
    if (chunkSize)
      return emitOpError("'chunk_size' is only valid with selection = chunk");
    return success();
  }
  if (!chunkSize)
    return emitOpError("'chunk_size' is required with selection = chunk");
  if (*chunkSize < 1)
    return emitOpError() << "'chunk_size' must be >= 1, got " << *chunkSize;
  int64_t numElements = cast<RankedTensorType>(inputType).getNumElements();
  int64_t expectedK = llvm::divideCeil(numElements, *chunkSize);
  if (k != expectedK)
    return emitOpError() << "'k' must be ceil(N / chunk_size) = " << expectedK
                         << " with selection = chunk, got " << k;
  return success();
}

LogicalResult
CltkCompressOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  if (failed(verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables)))
    return failure();
  return verifyState(*this, getStateAttr(), getInput().getType(), symbolTables);
}

//===----------------------------------------------------------------------===//
// SparseAllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult SparseAllReduceOp::verify() {
  Type resultType = getResult().getType();
  if (failed(verifyDenseType(*this, "result", resultType, /*allowHalf=*/true)))
    return failure();
  Builder b(getContext());
  if (failed(verifyVectorType(*this, "values", getValues().getType(),
                              b.getF32Type(), std::nullopt)))
    return failure();
  int64_t k = cast<RankedTensorType>(getValues().getType()).getDimSize(0);
  if (failed(verifyVectorType(*this, "indices", getIndices().getType(),
                              b.getI64Type(), k)))
    return failure();
  return verifyK(*this, k, resultType);
}

LogicalResult
SparseAllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  return verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables);
}

//===----------------------------------------------------------------------===//
// SparseReduceScatterOp
//===----------------------------------------------------------------------===//

LogicalResult SparseReduceScatterOp::verify() {
  Type resultType = getResult().getType();
  if (failed(verifyDenseType(*this, "result", resultType, /*allowHalf=*/true)))
    return failure();
  if (cast<RankedTensorType>(resultType).getRank() == 0)
    return emitOpError("'result' must have rank >= 1 (it is cut along "
                       "'scatter_axis')");
  if (getScatterAxis().getZExtValue() != 0)
    return emitOpError() << "'scatter_axis' must be 0 (a shard is then one "
                            "contiguous run of the flat indices), got "
                         << getScatterAxis().getZExtValue();
  Builder b(getContext());
  if (failed(verifyVectorType(*this, "values", getValues().getType(),
                              b.getF32Type(), std::nullopt)))
    return failure();
  int64_t k = cast<RankedTensorType>(getValues().getType()).getDimSize(0);
  return verifyVectorType(*this, "indices", getIndices().getType(),
                          b.getI64Type(), k);
}

LogicalResult
SparseReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  FailureOr<int64_t> groupSize =
      verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables);
  if (failed(groupSize))
    return failure();
  if (ShapedType::isDynamic(*groupSize))
    return success();
  // k indexes the whole gradient: the shard's elements times the group.
  auto shard = cast<RankedTensorType>(getResult().getType());
  int64_t k = cast<RankedTensorType>(getValues().getType()).getDimSize(0);
  int64_t numElements = shard.getNumElements() * *groupSize;
  if (k < 1 || k > numElements)
    return emitOpError() << "'k' must be in [1, " << numElements
                         << "] (the element count of the unsharded gradient, "
                         << *groupSize << " shards of " << shard << "), got "
                         << k;
  return success();
}

//===----------------------------------------------------------------------===//
// MemoryUpdateOp
//===----------------------------------------------------------------------===//

LogicalResult MemoryUpdateOp::verify() {
  Type inputType = getInput().getType();
  if (failed(verifyDenseType(*this, "input", inputType, /*allowHalf=*/true)))
    return failure();
  double beta = getBeta().convertToDouble();
  if (!(beta > 0.0 && beta <= 1.0))
    return emitOpError() << "'beta' must be in (0, 1], got " << beta;
  Builder b(getContext());
  if (failed(verifyVectorType(*this, "indices", getIndices().getType(),
                              b.getI64Type(), std::nullopt)))
    return failure();
  int64_t k = cast<RankedTensorType>(getIndices().getType()).getDimSize(0);
  return verifyK(*this, k, inputType);
}

LogicalResult
MemoryUpdateOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  return verifyState(*this, getStateAttr(), getInput().getType(), symbolTables);
}

//===----------------------------------------------------------------------===//
// LocalTopkAllGatherOp
//===----------------------------------------------------------------------===//

LogicalResult LocalTopkAllGatherOp::verify() {
  Type inputType = getInput().getType();
  // A 16-bit gradient's k values travel in 16 bits; the memory is f32.
  if (failed(verifyDenseType(*this, "input", inputType, /*allowHalf=*/true)))
    return failure();
  if (getResult().getType() != inputType)
    return emitOpError() << "'result' type " << getResult().getType()
                         << " must equal the input type " << inputType;
  return verifyK(*this, getKAttr().getInt(), inputType);
}

LogicalResult
LocalTopkAllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  if (failed(verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables)))
    return failure();
  return verifyState(*this, getStateAttr(), getInput().getType(), symbolTables);
}

//===----------------------------------------------------------------------===//
// GossipExchangeOp
//===----------------------------------------------------------------------===//

/// A gossip or elastic-averaging input: f32, or bf16/f16 when the exchange
/// is synchronous (the runtime widens it and sends it in its own 16 bits;
/// the one-sided windows of `mode = async` hold f32).
static LogicalResult verifyReplicaType(Operation *op, Type type,
                                       ExchangeMode mode) {
  Type element = mlir::getElementTypeOrSelf(type);
  if (mode == ExchangeMode::Async && (element.isBF16() || element.isF16()))
    return op->emitOpError()
           << "a " << element
           << " input needs 'mode = sync' (the one-sided windows of "
              "'mode = async' hold f32)";
  return verifyDenseType(op, "input", type, /*allowHalf=*/true);
}

LogicalResult GossipExchangeOp::verify() {
  if (failed(verifyReplicaType(*this, getInput().getType(), getMode())))
    return failure();
  double mixing = getMixing().convertToDouble();
  if (!(mixing > 0.0 && mixing < 1.0))
    return emitOpError() << "'mixing' must be in (0, 1), got " << mixing;
  int64_t period = getPeriodAttr().getInt();
  if (period < 1)
    return emitOpError() << "'period' must be >= 1, got " << period;
  int64_t seed = getSeedAttr().getInt();
  if (seed < 0)
    return emitOpError() << "'seed' must be >= 0, got " << seed;
  if (getSchedule() == Schedule::Random && getMode() != ExchangeMode::Async)
    return emitOpError() << "'schedule' random is not a pairing: it needs "
                            "mode = async";
  return success();
}

LogicalResult
GossipExchangeOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  FailureOr<int64_t> groupSize =
      verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables);
  if (failed(groupSize))
    return failure();
  if (getSchedule() == Schedule::Hypercube &&
      !ShapedType::isDynamic(*groupSize) && !llvm::isPowerOf2_64(*groupSize))
    return emitOpError() << "'schedule' hypercube needs a group size that is "
                            "a power of two, got "
                         << *groupSize;
  return verifyState(*this, getStateAttr(), Type(), symbolTables);
}

//===----------------------------------------------------------------------===//
// ElasticAverageOp
//===----------------------------------------------------------------------===//

LogicalResult ElasticAverageOp::verify() {
  if (failed(verifyReplicaType(*this, getInput().getType(), getMode())))
    return failure();
  double alpha = getAlpha().convertToDouble();
  if (!(alpha > 0.0 && alpha <= 1.0))
    return emitOpError() << "'alpha' must be in (0, 1], got " << alpha;
  int64_t period = getPeriodAttr().getInt();
  if (period < 1)
    return emitOpError() << "'period' must be >= 1, got " << period;
  if (getCenter() == CenterPlacement::Sharded &&
      getMode() != ExchangeMode::Async)
    return emitOpError() << "'center = sharded' needs 'mode = async' (the "
                            "synchronous center is replicated)";
  return success();
}

LogicalResult
ElasticAverageOp::verifySymbolUses(SymbolTableCollection &symbolTables) {
  FailureOr<int64_t> groupSize =
      verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTables);
  if (failed(groupSize))
    return failure();
  double alpha = getAlpha().convertToDouble();
  if (!ShapedType::isDynamic(*groupSize) && alpha * *groupSize > 1.0)
    return emitOpError() << "'alpha' times the group size (the center's "
                            "moving rate) must be <= 1, got "
                         << alpha << " * " << *groupSize;
  return verifyState(*this, getStateAttr(), getInput().getType(), symbolTables);
}
