//===- LowerBf16.cpp - bf16 conversions and accesses as integer ops ------===//
//
// Part of the GradComm project.
//
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_LOWERBF16PASS
#include "gradcomm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;

namespace {

/// PyTorch's quiet NaN for bfloat16 (c10::detail::round_to_nearest_even).
constexpr int64_t kBf16QuietNan = 0x7fc0;

Value intConstant(OpBuilder &builder, Location loc, Type type, int64_t value) {
  return arith::ConstantOp::create(builder, loc, type,
                                   builder.getIntegerAttr(type, value));
}

/// f32 -> bf16, round to nearest even; NaN -> the quiet NaN.
Value expandTruncate(OpBuilder &builder, Location loc, Value value) {
  Type i32 = builder.getI32Type();
  Type i16 = builder.getI16Type();
  Value bits = arith::BitcastOp::create(builder, loc, i32, value);
  Value sixteen = intConstant(builder, loc, i32, 16);
  Value high = arith::ShRUIOp::create(builder, loc, bits, sixteen);
  Value lsb = arith::AndIOp::create(builder, loc, high,
                                    intConstant(builder, loc, i32, 1));
  Value bias = arith::AddIOp::create(builder, loc, lsb,
                                     intConstant(builder, loc, i32, 0x7fff));
  Value sum = arith::AddIOp::create(builder, loc, bits, bias);
  Value rounded = arith::TruncIOp::create(
      builder, loc, i16, arith::ShRUIOp::create(builder, loc, sum, sixteen));
  Value isNan = arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::UNO,
                                      value, value);
  Value result = arith::SelectOp::create(
      builder, loc, isNan, intConstant(builder, loc, i16, kBf16QuietNan),
      rounded);
  return arith::BitcastOp::create(builder, loc, builder.getBF16Type(), result);
}

/// bf16 -> f32 (exact): the bits become the high half.
Value expandExtend(OpBuilder &builder, Location loc, Value value) {
  Type i32 = builder.getI32Type();
  Value bits =
      arith::BitcastOp::create(builder, loc, builder.getI16Type(), value);
  Value wide = arith::ExtUIOp::create(builder, loc, i32, bits);
  Value shifted = arith::ShLIOp::create(builder, loc, wide,
                                        intConstant(builder, loc, i32, 16));
  return arith::BitcastOp::create(builder, loc, builder.getF32Type(), shifted);
}

/// A bf16 load reads an i16 and bitcasts it; a bf16 store bitcasts its
/// value and writes an i16.
void lowerAccess(Operation *op) {
  OpBuilder builder(op);
  Type i16 = builder.getI16Type();
  if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
    Value result = load.getResult();
    result.setType(i16);
    builder.setInsertionPointAfter(op);
    auto bits = arith::BitcastOp::create(builder, op->getLoc(),
                                         builder.getBF16Type(), result);
    result.replaceAllUsesExcept(bits, bits);
    return;
  }
  auto store = cast<LLVM::StoreOp>(op);
  store.getValueMutable().assign(
      arith::BitcastOp::create(builder, op->getLoc(), i16, store.getValue()));
}

bool isBf16Access(Operation *op) {
  if (auto load = dyn_cast<LLVM::LoadOp>(op))
    return load.getType().isBF16();
  if (auto store = dyn_cast<LLVM::StoreOp>(op))
    return store.getValue().getType().isBF16();
  return false;
}

class LowerBf16Pass : public gradcomm::impl::LowerBf16PassBase<LowerBf16Pass> {
public:
  void runOnOperation() override {
    SmallVector<Operation *> casts, accesses;
    getOperation()->walk([&](Operation *op) {
      if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
        if (trunc.getIn().getType().isF32() && trunc.getType().isBF16() &&
            !trunc.getRoundingmodeAttr())
          casts.push_back(op);
      } else if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
        if (ext.getIn().getType().isBF16() && ext.getType().isF32())
          casts.push_back(op);
      } else if (isBf16Access(op)) {
        accesses.push_back(op);
      }
    });
    for (Operation *op : accesses)
      lowerAccess(op);
    for (Operation *op : casts) {
      OpBuilder builder(op);
      Value replacement =
          isa<arith::TruncFOp>(op)
              ? expandTruncate(builder, op->getLoc(), op->getOperand(0))
              : expandExtend(builder, op->getLoc(), op->getOperand(0));
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace
