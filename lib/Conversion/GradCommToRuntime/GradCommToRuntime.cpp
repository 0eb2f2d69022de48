//===- GradCommToRuntime.cpp - Lower GradComm to runtime calls ------------===//
//
// Part of the GradComm project.
//
// See the pass description in include/gradcomm/Conversion/Passes.td. One
// pattern per op family; the fused ScaleCom pattern outranks the per-op
// ones.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Conversion/GradCommToRuntime/GradCommToRuntime.h"

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_CONVERTGRADCOMMTORUNTIMEPASS
#include "gradcomm/Conversion/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

/// Attribute the pass puts on each communication op before converting it:
/// the name the runtime uses for the op in messages and counters.
static constexpr llvm::StringLiteral kOpNameAttr = "gradcomm.runtime_name";

namespace {

/// Builds runtime calls at the rewriter's insertion point.
class RuntimeCalls {
public:
  RuntimeCalls(ConversionPatternRewriter &rewriter, Operation *op)
      : rewriter(rewriter), loc(op->getLoc()),
        module(op->getParentOfType<ModuleOp>()) {}

  /// A NUL-terminated constant string as `!llvm.ptr` (one global per
  /// distinct string).
  Value string(StringRef text) {
    std::string symbol = "__gradcomm_str_" + sanitizeSymbolName(text);
    auto global = module.lookupSymbol<LLVM::GlobalOp>(symbol);
    if (!global) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      std::string value = (text + Twine('\0')).str();
      auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), value.size());
      global = LLVM::GlobalOp::create(rewriter, loc, type, /*isConstant=*/true,
                                      LLVM::Linkage::Internal, symbol,
                                      rewriter.getStringAttr(value));
    }
    return LLVM::AddressOfOp::create(rewriter, loc, global);
  }

  Value i32(int64_t value) {
    return arith::ConstantIntOp::create(rewriter, loc, value, 32);
  }
  Value i64(int64_t value) {
    return arith::ConstantIntOp::create(rewriter, loc, value, 64);
  }
  Value f32(double value) {
    return arith::ConstantOp::create(rewriter, loc,
                                     rewriter.getF32FloatAttr(value));
  }

  /// The buffer of `tensor`; `readOnly` promises the runtime will not write
  /// it, otherwise bufferization copies it if the tensor is read later.
  Value buffer(Value tensor, bool readOnly) {
    auto type = cast<RankedTensorType>(tensor.getType());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    auto op = bufferization::ToBufferOp::create(rewriter, loc, memrefType,
                                                tensor, readOnly);
    return op.getResult();
  }

  /// A fresh buffer for an op's output.
  Value allocate(Type tensorType) {
    auto type = cast<RankedTensorType>(tensorType);
    return memref::AllocOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()));
  }

  Value toTensor(Value buffer, Type tensorType) {
    return bufferization::ToTensorOp::create(rewriter, loc, tensorType, buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  /// `memref<...xT>` -> `memref<*xT>`, the runtime's argument type.
  Value unranked(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return memref::CastOp::create(
        rewriter, loc, UnrankedMemRefType::get(type.getElementType(), 0),
        buffer);
  }

  /// Calls `gradcomm_rt_<name>` (C interface, returns a status) and stops
  /// the job if it failed.
  void callChecked(StringRef name, ValueRange args) {
    func::FuncOp callee = declare(("gradcomm_rt_" + name).str(),
                                  TypeRange(args), rewriter.getI32Type(),
                                  /*cInterface=*/true);
    auto call = func::CallOp::create(rewriter, loc, callee, args);
    func::FuncOp check =
        declare("gradcomm_rt_check", rewriter.getI32Type(), {}, false);
    func::CallOp::create(rewriter, loc, check, call.getResult(0));
  }

  /// Calls a plain runtime function returning an index-like i64.
  Value callIndex(StringRef name) {
    func::FuncOp callee = declare(name, {}, rewriter.getI64Type(), false);
    Value result =
        func::CallOp::create(rewriter, loc, callee, ValueRange()).getResult(0);
    return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                      result);
  }

  /// The private declaration of `name`, created on first use.
  func::FuncOp declare(StringRef name, TypeRange inputs, TypeRange results,
                       bool cInterface) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto func = func::FuncOp::create(rewriter, loc, name,
                                     rewriter.getFunctionType(inputs, results));
    func.setPrivate();
    if (cInterface)
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    rewriter.getUnitAttr());
    return func;
  }

private:
  ConversionPatternRewriter &rewriter;
  Location loc;
  ModuleOp module;
};

StringRef runtimeName(Operation *op) {
  return op->getAttrOfType<StringAttr>(kOpNameAttr).getValue();
}

//===----------------------------------------------------------------------===//
// ScaleCom: fused, then op by op
//===----------------------------------------------------------------------===//

/// cltk_compress whose values feed exactly one sparse_all_reduce and whose
/// indices feed that op and one memory_update of the same state and
/// gradient: one fused runtime call.
struct FusedScaleComPattern : public OpConversionPattern<CltkCompressOp> {
  FusedScaleComPattern(MLIRContext *context)
      : OpConversionPattern(context, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(CltkCompressOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getValues().hasOneUse())
      return rewriter.notifyMatchFailure(op, "values used more than once");
    auto reduce =
        dyn_cast<SparseAllReduceOp>(*op.getValues().getUsers().begin());
    if (!reduce || reduce.getIndices() != op.getIndices())
      return rewriter.notifyMatchFailure(op, "no matching sparse_all_reduce");
    MemoryUpdateOp update;
    for (Operation *user : op.getIndices().getUsers()) {
      if (user == reduce.getOperation())
        continue;
      auto candidate = dyn_cast<MemoryUpdateOp>(user);
      if (!candidate || update || candidate.getState() != op.getState() ||
          candidate.getInput() != op.getInput())
        return rewriter.notifyMatchFailure(op, "indices used elsewhere");
      update = candidate;
    }
    if (!update)
      return rewriter.notifyMatchFailure(op, "no memory_update");

    RuntimeCalls rt(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value out = rt.allocate(reduce.getResult().getType());
    int64_t chunkSize = op.getChunkSize() ? int64_t(*op.getChunkSize()) : 0;
    rt.callChecked("scalecom_f32",
                   {rt.string(op.getState()), rt.unranked(grad),
                    rt.unranked(out), rt.i64(op.getKAttr().getInt()),
                    rt.i32(static_cast<int32_t>(op.getSelection())),
                    rt.i64(chunkSize),
                    rt.f32(update.getBeta().convertToDouble()),
                    rt.i32(static_cast<int32_t>(reduce.getReduction()))});
    Value result = rt.toTensor(out, reduce.getResult().getType());
    rewriter.replaceOp(reduce, result);
    rewriter.eraseOp(update);
    rewriter.eraseOp(op);
    return success();
  }
};

struct CltkCompressPattern : public OpConversionPattern<CltkCompressOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CltkCompressOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value values = rt.allocate(op.getValues().getType());
    Value indices = rt.allocate(op.getIndices().getType());
    int64_t chunkSize = op.getChunkSize() ? int64_t(*op.getChunkSize()) : 0;
    rt.callChecked("cltk_compress_f32",
                   {rt.string(op.getState()), rt.unranked(grad),
                    rt.i64(op.getKAttr().getInt()),
                    rt.i32(static_cast<int32_t>(op.getSelection())),
                    rt.i64(chunkSize), rt.unranked(values),
                    rt.unranked(indices)});
    rewriter.replaceOp(op, {rt.toTensor(values, op.getValues().getType()),
                            rt.toTensor(indices, op.getIndices().getType())});
    return success();
  }
};

struct SparseAllReducePattern : public OpConversionPattern<SparseAllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SparseAllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    Value values = rt.buffer(adaptor.getValues(), /*readOnly=*/true);
    Value indices = rt.buffer(adaptor.getIndices(), /*readOnly=*/true);
    Value out = rt.allocate(op.getResult().getType());
    rt.callChecked("sparse_all_reduce_f32",
                   {rt.string(runtimeName(op)), rt.unranked(values),
                    rt.unranked(indices), rt.unranked(out),
                    rt.i32(static_cast<int32_t>(op.getReduction()))});
    rewriter.replaceOp(op, rt.toTensor(out, op.getResult().getType()));
    return success();
  }
};

struct MemoryUpdatePattern : public OpConversionPattern<MemoryUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MemoryUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value indices = rt.buffer(adaptor.getIndices(), /*readOnly=*/true);
    rt.callChecked("memory_update_f32",
                   {rt.string(op.getState()), rt.unranked(grad),
                    rt.unranked(indices),
                    rt.f32(op.getBeta().convertToDouble())});
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Baseline, gossip, dense all-reduce
//===----------------------------------------------------------------------===//

struct LocalTopkPattern : public OpConversionPattern<LocalTopkAllGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LocalTopkAllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value out = rt.allocate(op.getResult().getType());
    rt.callChecked("local_topk_all_gather_f32",
                   {rt.string(op.getState()), rt.unranked(grad),
                    rt.unranked(out), rt.i64(op.getKAttr().getInt()),
                    rt.i32(static_cast<int32_t>(op.getReduction()))});
    rewriter.replaceOp(op, rt.toTensor(out, op.getResult().getType()));
    return success();
  }
};

struct GossipExchangePattern : public OpConversionPattern<GossipExchangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GossipExchangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    // Mixed in place: the input's buffer when nothing reads it later.
    Value x = rt.buffer(adaptor.getInput(), /*readOnly=*/false);
    rt.callChecked("gossip_exchange_f32",
                   {rt.string(op.getState()), rt.unranked(x),
                    rt.i32(static_cast<int32_t>(op.getSchedule())),
                    rt.f32(op.getMixing().convertToDouble()),
                    rt.i64(op.getSeedAttr().getInt()),
                    rt.i64(op.getPeriodAttr().getInt())});
    rewriter.replaceOp(op, rt.toTensor(x, op.getResult().getType()));
    return success();
  }
};

struct DenseAllReducePattern : public OpConversionPattern<shard::AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(shard::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    // Reduced in place: the input's buffer when nothing reads it later.
    Value data = rt.buffer(adaptor.getInput(), /*readOnly=*/false);
    int32_t reduction = op.getReduction() == shard::ReductionKind::Average
                            ? static_cast<int32_t>(Reduction::Average)
                            : static_cast<int32_t>(Reduction::Sum);
    rt.callChecked(
        "dense_all_reduce_f32",
        {rt.string(runtimeName(op)), rt.unranked(data), rt.i32(reduction)});
    rewriter.replaceOp(op, rt.toTensor(data, op.getResult().getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Declarations and process queries
//===----------------------------------------------------------------------===//

template <typename OpTy>
struct EraseDeclarationPattern : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

/// The one grid axis with more than one process (or -1): the runtime's
/// group runs along it.
int64_t communicatingAxis(shard::GridOp grid) {
  for (auto [axis, size] : llvm::enumerate(grid.getShape()))
    if (size != 1)
      return axis;
  return -1;
}

struct ProcessMultiIndexPattern
    : public OpConversionPattern<shard::ProcessMultiIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(shard::ProcessMultiIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    RuntimeCalls rt(rewriter, op);
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t axis = 0; axis < grid.getRank(); ++axis)
        axes.push_back(axis);
    SmallVector<Value> results;
    for (int64_t axis : axes)
      results.push_back(
          axis == communicatingAxis(grid)
              ? rt.callIndex("gradcomm_rt_rank")
              : arith::ConstantIndexOp::create(rewriter, op.getLoc(), 0)
                    .getResult());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ProcessLinearIndexPattern
    : public OpConversionPattern<shard::ProcessLinearIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(shard::ProcessLinearIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt(rewriter, op);
    rewriter.replaceOp(op, rt.callIndex("gradcomm_rt_rank"));
    return success();
  }
};

struct GridShapePattern : public OpConversionPattern<shard::GridShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(shard::GridShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    RuntimeCalls rt(rewriter, op);
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t axis = 0; axis < grid.getRank(); ++axis)
        axes.push_back(axis);
    SmallVector<Value> results;
    for (int64_t axis : axes) {
      int64_t size = grid.getShape()[axis];
      results.push_back(
          ShapedType::isDynamic(size)
              ? rt.callIndex("gradcomm_rt_size")
              : arith::ConstantIndexOp::create(rewriter, op.getLoc(), size)
                    .getResult());
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

class ConvertGradCommToRuntimePass
    : public gradcomm::impl::ConvertGradCommToRuntimePassBase<
          ConvertGradCommToRuntimePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (failed(prepare()))
      return signalPassFailure();
    MLIRContext *context = &getContext();
    ConversionTarget target(*context);
    target.addLegalDialect<
        arith::ArithDialect, bufferization::BufferizationDialect,
        func::FuncDialect, LLVM::LLVMDialect, memref::MemRefDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<GradCommDialect, shard::ShardDialect>();

    RewritePatternSet patterns(context);
    patterns.add<FusedScaleComPattern>(context);
    patterns
        .add<CltkCompressPattern, SparseAllReducePattern, MemoryUpdatePattern,
             LocalTopkPattern, GossipExchangePattern, DenseAllReducePattern,
             ProcessMultiIndexPattern, ProcessLinearIndexPattern,
             GridShapePattern, EraseDeclarationPattern<StateOp>,
             EraseDeclarationPattern<shard::GridOp>>(context);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    dropPolicyAttributes();
  }

private:
  /// The `gradcomm.*` argument attributes (names, policies) are consumed by
  /// now; LLVM translation would warn about them.
  void dropPolicyAttributes() {
    getOperation().walk([](FunctionOpInterface func) {
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        for (NamedAttribute attr : func.getArgAttrs(i))
          if (attr.getName().getValue().starts_with("gradcomm."))
            func.removeArgAttr(i, attr.getName());
    });
  }

  /// Checks what the runtime cannot do (diagnostics, not a failed
  /// legalization), names every communication op for the runtime, and adds
  /// the group-size check at the entry of every communicating function.
  LogicalResult prepare();
};

} // namespace

/// Checks that `grid`'s non-trivial axes are exactly `axes` and returns the
/// group size (kDynamic if unknown).
static FailureOr<int64_t> checkGroup(Operation *op, FlatSymbolRefAttr gridRef,
                                     ArrayRef<int16_t> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridRef);
  if (!grid)
    return op->emitOpError("refers to a missing grid");
  int64_t size = 1;
  for (auto [axis, axisSize] : llvm::enumerate(grid.getShape())) {
    bool reduced = llvm::is_contained(axes, static_cast<int16_t>(axis));
    if (!reduced && axisSize != 1)
      return op->emitOpError()
             << "communicates over part of grid " << gridRef << " (axis "
             << axis << " of size " << axisSize
             << " is not reduced over); the runtime's group is every rank, "
                "so grid axes outside the group must have size 1";
    if (reduced)
      size = ShapedType::isDynamic(axisSize) || ShapedType::isDynamic(size)
                 ? ShapedType::kDynamic
                 : size * axisSize;
  }
  return size;
}

LogicalResult ConvertGradCommToRuntimePass::prepare() {
  ModuleOp module = getOperation();
  bool ok = true;
  Builder b(&getContext());
  module.walk([&](FunctionOpInterface func) {
    llvm::SmallSetVector<int64_t, 2> groupSizes;
    int64_t counter = 0;
    func.walk([&](Operation *op) {
      FailureOr<int64_t> size = failure();
      std::string name;
      if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
        auto type = dyn_cast<RankedTensorType>(reduce.getInput().getType());
        if (!type || !type.getElementType().isF32() ||
            reduce.getResult().getType() != type) {
          op->emitOpError() << "cannot be lowered to the runtime: it reduces "
                               "f32 tensors only (input "
                            << reduce.getInput().getType() << ", result "
                            << reduce.getResult().getType() << ")";
          ok = false;
          return;
        }
        if (reduce.getReduction() != shard::ReductionKind::Sum &&
            reduce.getReduction() != shard::ReductionKind::Average) {
          op->emitOpError()
              << "cannot be lowered to the runtime: reduction '"
              << shard::stringifyReductionKind(reduce.getReduction())
              << "' (sum and average only)";
          ok = false;
          return;
        }
        size = checkGroup(op, reduce.getGridAttr(), reduce.getGridAxes());
        GradientUse use = analyzeGradient(reduce.getResult());
        // Named like the ScaleCom state of the same gradient, so counters
        // line up whichever strategy ran.
        name = sanitizeSymbolName(
            use.parameter
                ? parameterName(use.parameter) + "_grad"
                : (func.getName() + "_all_reduce_" + Twine(counter)).str());
      } else if (auto sparse = dyn_cast<SparseAllReduceOp>(op)) {
        size = checkGroup(op, sparse.getGridAttr(), sparse.getGridAxes());
        auto compress = sparse.getValues().getDefiningOp<CltkCompressOp>();
        name = compress
                   ? compress.getState().str() + "_reduce"
                   : (func.getName() + "_sparse_all_reduce_" + Twine(counter))
                         .str();
      } else if (auto compress = dyn_cast<CltkCompressOp>(op)) {
        size = checkGroup(op, compress.getGridAttr(), compress.getGridAxes());
      } else if (auto local = dyn_cast<LocalTopkAllGatherOp>(op)) {
        size = checkGroup(op, local.getGridAttr(), local.getGridAxes());
      } else if (auto gossip = dyn_cast<GossipExchangeOp>(op)) {
        size = checkGroup(op, gossip.getGridAttr(), gossip.getGridAxes());
      } else {
        return;
      }
      ++counter;
      if (failed(size)) {
        ok = false;
        return;
      }
      if (!ShapedType::isDynamic(*size))
        groupSizes.insert(*size);
      if (!name.empty())
        op->setAttr(kOpNameAttr, b.getStringAttr(name));
    });
    if (groupSizes.empty() || func.isExternal())
      return;
    // The step is only valid on the group size it was compiled for.
    OpBuilder builder =
        OpBuilder::atBlockBegin(&func.getFunctionBody().front());
    ModuleOp parent = func->getParentOfType<ModuleOp>();
    auto checkType = builder.getFunctionType(builder.getI64Type(), {});
    auto callee =
        parent.lookupSymbol<func::FuncOp>("gradcomm_rt_expect_group_size");
    if (!callee) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(parent.getBody());
      callee = func::FuncOp::create(builder, func.getLoc(),
                                    "gradcomm_rt_expect_group_size", checkType);
      callee.setPrivate();
    }
    for (int64_t size : groupSizes) {
      Value expected =
          arith::ConstantIntOp::create(builder, func.getLoc(), size, 64);
      func::CallOp::create(builder, func.getLoc(), callee, expected);
    }
  });
  return success(ok);
}
