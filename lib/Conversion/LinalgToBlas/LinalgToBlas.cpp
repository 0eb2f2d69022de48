//===- LinalgToBlas.cpp - Matrix products as calls of libgradcomm_blas ----===//
//
// Part of the GradComm project.
//
// A matrix product lowered to loops sums each output in one float chain and
// streams its operands from memory once per output row: ResNet-18's step
// ran 7-10x slower than eager PyTorch's (docs/performance.md, "Stock
// models"). This conversion hands every float32 matrix product to
// libgradcomm_blas's gradcomm_blas_matmul_f32, a blocked BLAS kernel
// (serial OpenBLAS), as PyTorch hands its products to MKL or oneDNN. A
// library that is tuned for each CPU is the right tool here; MLIR's tiling
// and vectorization could get there too, at the cost of tuning tile sizes
// per CPU ourselves. The library is not the communication runtime: a step
// without products needs no BLAS, and the runtime needs none at all.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Conversion/LinalgToBlas/LinalgToBlas.h"
#include "gradcomm/Transforms/Buffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <limits>

namespace mlir::gradcomm {
#define GEN_PASS_DEF_CONVERTLINALGTOBLASPASS
#include "gradcomm/Conversion/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using mlir::gradcomm::isFreshAllocation;
using mlir::gradcomm::rootBuffer;

namespace {

/// BLAS takes 32-bit extents and leading dimensions: a larger extent or
/// stride keeps the product a loop nest.
constexpr int64_t kMaxBlasInt = std::numeric_limits<int32_t>::max();

constexpr llvm::StringLiteral kMatmulFunction = "gradcomm_blas_matmul_f32";

/// The loop dimensions of a matrix product: C[b, m, n] += A[b, m, k] *
/// B[b, k, n], the batch dimension optional.
struct ProductDims {
  std::optional<unsigned> batch;
  unsigned m, n, k;
};

/// Whether the body is `out + a * b` in float32 (either operand order),
/// rounded as the loops would: one multiplication, one addition.
bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 ||
      !llvm::all_of(body.getArgumentTypes(),
                    [](Type t) { return t.isF32(); }) ||
      !llvm::hasNItems(body.getOperations(), 3))
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add =
      dyn_cast_if_present<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  if (!mul || !add || mul.getFastmath() != arith::FastMathFlags::none ||
      add.getFastmath() != arith::FastMathFlags::none)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1),
        acc = body.getArgument(2);
  bool productOfInputs = (mul.getLhs() == a && mul.getRhs() == b) ||
                         (mul.getLhs() == b && mul.getRhs() == a);
  bool accumulates = (add.getLhs() == acc && add.getRhs() == mul) ||
                     (add.getLhs() == mul && add.getRhs() == acc);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return productOfInputs && accumulates && yield.getNumOperands() == 1 &&
         yield.getOperand(0) == add;
}

/// Whether `map` has exactly the dimensions `dims`, each once (any order).
bool hasExactlyDims(AffineMap map, ArrayRef<unsigned> dims) {
  if (!map.isProjectedPermutation() || map.getNumResults() != dims.size())
    return false;
  return llvm::all_of(dims, [&](unsigned d) {
    return map.getResultPosition(getAffineDimExpr(d, map.getContext()))
        .has_value();
  });
}

/// Whether the output buffer is certainly not one of the inputs' (BLAS
/// reads A and B while it writes C): a fresh allocation, or an argument the
/// caller marked `llvm.noalias` (gradcomm-outline-kernels proves it).
bool outputIsDisjoint(linalg::GenericOp op) {
  Value out = rootBuffer(op.getDpsInits()[0]);
  for (Value in : op.getDpsInputs())
    if (rootBuffer(in) == out)
      return false;
  if (isFreshAllocation(out))
    return true;
  auto argument = dyn_cast<BlockArgument>(out);
  if (!argument)
    return false;
  auto func = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
  return func && argument.getOwner() == &func.getBody().front() &&
         func.getArgAttr(argument.getArgNumber(),
                         LLVM::LLVMDialect::getNoAliasAttrName());
}

/// Whether the matrix (row, col) of `value`, indexed by `map`, is stored
/// as BLAS takes it (as gradcomm_blas_matmul_f32 checks): row-major or
/// column-major, with a leading dimension at least the other extent. A
/// dimension of extent 1 may carry any stride.
bool blasLayout(Value value, AffineMap map, unsigned row, unsigned col) {
  auto type = cast<MemRefType>(value.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, [](int64_t stride) {
        return ShapedType::isDynamic(stride) || stride > kMaxBlasInt;
      }))
    return false;
  MLIRContext *ctx = map.getContext();
  unsigned r = *map.getResultPosition(getAffineDimExpr(row, ctx));
  unsigned c = *map.getResultPosition(getAffineDimExpr(col, ctx));
  int64_t rows = type.getDimSize(r), cols = type.getDimSize(c);
  bool rowMajor = (strides[c] == 1 || cols == 1) &&
                  (rows == 1 || strides[r] >= std::max<int64_t>(cols, 1));
  bool colMajor = (strides[r] == 1 || rows == 1) &&
                  (cols == 1 || strides[c] >= std::max<int64_t>(rows, 1));
  return rowMajor || colMajor;
}

/// The product's dimensions when `op` is a float32 matrix product on
/// statically shaped buffers of at least `minMultiplyAdds` terms.
std::optional<ProductDims> matchProduct(linalg::GenericOp op,
                                        int64_t minMultiplyAdds) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !isMultiplyAccumulate(op))
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
        llvm::any_of(type.getShape(),
                     [](int64_t size) { return size > kMaxBlasInt; }))
      return std::nullopt;
  }
  // inferContractionDims expects projected permutations (a convolution's
  // window `oh + kh` is none).
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isProjectedPermutation(); }))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> found =
      linalg::inferContractionDims(op);
  if (failed(found) || found->m.size() != 1 || found->n.size() != 1 ||
      found->k.size() != 1 || found->batch.size() > 1 ||
      op.getNumLoops() != 3 + found->batch.size())
    return std::nullopt;
  ProductDims dims{std::nullopt, found->m[0], found->n[0], found->k[0]};
  SmallVector<unsigned> batch(found->batch.begin(), found->batch.end());
  if (!batch.empty())
    dims.batch = batch[0];
  auto with = [&](std::initializer_list<unsigned> rest) {
    SmallVector<unsigned> all(batch);
    all.append(rest);
    return all;
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!hasExactlyDims(maps[0], with({dims.m, dims.k})) ||
      !hasExactlyDims(maps[1], with({dims.k, dims.n})) ||
      !hasExactlyDims(maps[2], with({dims.m, dims.n})))
    return std::nullopt;
  if (!blasLayout(op.getDpsInputs()[0], maps[0], dims.m, dims.k) ||
      !blasLayout(op.getDpsInputs()[1], maps[1], dims.k, dims.n) ||
      !blasLayout(op.getDpsInits()[0], maps[2], dims.m, dims.n))
    return std::nullopt;
  int64_t terms = 1;
  for (int64_t range : op.getStaticLoopRanges())
    terms *= range;
  if (terms < minMultiplyAdds || !outputIsDisjoint(op))
    return std::nullopt;
  return dims;
}

/// `value` (indexed by `map`) as a rank-3 view indexed (b, row, col) with a
/// dynamic strided layout, the type gradcomm_blas_matmul_f32 takes.
Value matrixView(OpBuilder &builder, Location loc, Value value, AffineMap map,
                 std::optional<unsigned> batch, unsigned row, unsigned col) {
  MLIRContext *ctx = builder.getContext();
  SmallVector<unsigned> order;
  if (batch)
    order.push_back(*batch);
  order.append({row, col});
  SmallVector<AffineExpr> permutation;
  bool identity = true;
  for (auto [i, dim] : llvm::enumerate(order)) {
    unsigned position = *map.getResultPosition(getAffineDimExpr(dim, ctx));
    identity &= position == i;
    permutation.push_back(getAffineDimExpr(position, ctx));
  }
  if (!identity)
    value = memref::TransposeOp::create(
        builder, loc, value,
        AffineMapAttr::get(AffineMap::get(order.size(), 0, permutation, ctx)));
  if (!batch) {
    auto type = cast<MemRefType>(value.getType());
    SmallVector<int64_t> shape = {1};
    llvm::append_range(shape, type.getShape());
    value = memref::ExpandShapeOp::create(
        builder, loc, shape, value,
        ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  }
  int64_t dynamic = ShapedType::kDynamic;
  auto layout =
      StridedLayoutAttr::get(ctx, dynamic, {dynamic, dynamic, dynamic});
  auto type = MemRefType::get({dynamic, dynamic, dynamic}, builder.getF32Type(),
                              layout);
  return memref::CastOp::create(builder, loc, type, value);
}

func::FuncOp declareMatmul(ModuleOp module) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(kMatmulFunction))
    return existing;
  MLIRContext *ctx = module.getContext();
  int64_t dynamic = ShapedType::kDynamic;
  auto layout =
      StridedLayoutAttr::get(ctx, dynamic, {dynamic, dynamic, dynamic});
  auto matrices = MemRefType::get({dynamic, dynamic, dynamic},
                                  Float32Type::get(ctx), layout);
  auto builder = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(
      builder, module.getLoc(), kMatmulFunction,
      FunctionType::get(ctx, {matrices, matrices, matrices}, {}));
  func.setPrivate();
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(ctx));
  return func;
}

class ConvertLinalgToBlasPass
    : public gradcomm::impl::ConvertLinalgToBlasPassBase<
          ConvertLinalgToBlasPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::GenericOp, ProductDims>> products;
    module.walk([&](linalg::GenericOp op) {
      if (std::optional<ProductDims> dims = matchProduct(op, minMultiplyAdds))
        products.emplace_back(op, *dims);
    });
    if (products.empty())
      return;
    func::FuncOp callee = declareMatmul(module);
    for (auto [op, dims] : products) {
      OpBuilder builder(op);
      Location loc = op.getLoc();
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      Value a = matrixView(builder, loc, op.getDpsInputs()[0], maps[0],
                           dims.batch, dims.m, dims.k);
      Value b = matrixView(builder, loc, op.getDpsInputs()[1], maps[1],
                           dims.batch, dims.k, dims.n);
      Value c = matrixView(builder, loc, op.getDpsInits()[0], maps[2],
                           dims.batch, dims.m, dims.n);
      func::CallOp::create(builder, loc, callee, ValueRange{a, b, c});
      op.erase();
    }
  }
};

} // namespace
