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

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "gradcomm/runtime.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::gradcomm {
#define GEN_PASS_DEF_CONVERTGRADCOMMTORUNTIMEPASS
#include "gradcomm/Conversion/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using namespace mlir::gradcomm;

// The runtime takes the dialect's enums as plain integers: the values are
// one contract, checked here where both sides are visible.
static_assert(static_cast<int>(Selection::Exact) == GRADCOMM_SELECT_EXACT &&
                  static_cast<int>(Selection::Chunk) == GRADCOMM_SELECT_CHUNK,
              "Selection enum and gradcomm_selection disagree");
static_assert(static_cast<int>(Reduction::Sum) == GRADCOMM_REDUCE_SUM &&
                  static_cast<int>(Reduction::Average) ==
                      GRADCOMM_REDUCE_AVERAGE,
              "Reduction enum and gradcomm_reduction disagree");
static_assert(
    static_cast<int>(Schedule::Matching) == GRADCOMM_SCHEDULE_MATCHING &&
        static_cast<int>(Schedule::Ring) == GRADCOMM_SCHEDULE_RING &&
        static_cast<int>(Schedule::Hypercube) == GRADCOMM_SCHEDULE_HYPERCUBE &&
        static_cast<int>(Schedule::Random) == GRADCOMM_SCHEDULE_RANDOM,
    "Schedule enum and gradcomm_schedule disagree");

//===----------------------------------------------------------------------===//
// The runtime's functions, declared once each from one table
//===----------------------------------------------------------------------===//

namespace {

/// The runtime entry points generated code calls
/// (runtime/include/gradcomm/runtime_memref.h).
enum class RuntimeFn {
  DenseAllReduce,
  DenseAllReduceBF16,
  DenseAllReduceF16,
  ScaleCom,
  ScaleComRecipe,
  ScaleComRecipeBF16,
  ScaleComRecipeF16,
  CltkCompress,
  SparseAllReduce,
  MemoryUpdate,
  ReduceScatter,
  ReduceScatterBF16,
  ReduceScatterF16,
  ScaleComReduceScatter,
  ScaleComReduceScatterBF16,
  ScaleComReduceScatterF16,
  AllGather,
  AllGatherBF16,
  AllGatherF16,
  LocalTopkAllGather,
  LocalTopkAllGatherBF16,
  LocalTopkAllGatherF16,
  GossipExchange,
  GossipExchangeBF16,
  GossipExchangeF16,
  GossipAsync,
  ElasticAverage,
  ElasticAverageBF16,
  ElasticAverageF16,
  ElasticAverageAsync,
  ElasticAverageSharded,
  Check,
  Record,
  ExpectGroupSize,
  UseGroup,
  Rank,
  Size,
};

/// Argument and result kinds of a runtime function.
enum class Kind { None, Str, BufF32, BufBF16, BufF16, BufI64, I32, I64, F32 };

struct RuntimeFnSpec {
  RuntimeFn fn;
  llvm::StringLiteral name;
  /// Takes memref descriptors: declared with `llvm.emit_c_interface`.
  bool cInterface;
  Kind result;
  std::initializer_list<Kind> args;
};

// clang-format off
const RuntimeFnSpec kRuntimeFns[] = {
    {RuntimeFn::DenseAllReduce, "gradcomm_rt_dense_all_reduce_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::I32}},
    {RuntimeFn::DenseAllReduceBF16, "gradcomm_rt_dense_all_reduce_bf16", true,
     Kind::I32, {Kind::Str, Kind::BufBF16, Kind::I32}},
    {RuntimeFn::DenseAllReduceF16, "gradcomm_rt_dense_all_reduce_f16", true,
     Kind::I32, {Kind::Str, Kind::BufF16, Kind::I32}},
    {RuntimeFn::ScaleCom, "gradcomm_rt_scalecom_f32", true, Kind::I32,
     {Kind::Str, Kind::BufF32, Kind::BufF32, Kind::I64, Kind::I32, Kind::I64,
      Kind::F32, Kind::I32}},
    {RuntimeFn::ScaleComRecipe, "gradcomm_rt_scalecom_recipe_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::BufF32, Kind::I64, Kind::I32,
                 Kind::I64, Kind::F32, Kind::I64, Kind::F32, Kind::F32,
                 Kind::F32, Kind::I32, Kind::I32, Kind::I32}},
    {RuntimeFn::ScaleComRecipeBF16, "gradcomm_rt_scalecom_recipe_bf16", true,
     Kind::I32, {Kind::Str, Kind::BufBF16, Kind::BufBF16, Kind::I64, Kind::I32,
                 Kind::I64, Kind::F32, Kind::I64, Kind::F32, Kind::F32,
                 Kind::F32, Kind::I32, Kind::I32, Kind::I32}},
    {RuntimeFn::ScaleComRecipeF16, "gradcomm_rt_scalecom_recipe_f16", true,
     Kind::I32, {Kind::Str, Kind::BufF16, Kind::BufF16, Kind::I64, Kind::I32,
                 Kind::I64, Kind::F32, Kind::I64, Kind::F32, Kind::F32,
                 Kind::F32, Kind::I32, Kind::I32, Kind::I32}},
    {RuntimeFn::CltkCompress, "gradcomm_rt_cltk_compress_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::I64, Kind::I32, Kind::I64,
                 Kind::BufF32, Kind::BufI64}},
    {RuntimeFn::SparseAllReduce, "gradcomm_rt_sparse_all_reduce_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::BufI64, Kind::BufF32,
                 Kind::I32}},
    {RuntimeFn::MemoryUpdate, "gradcomm_rt_memory_update_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::BufI64, Kind::F32}},
    {RuntimeFn::ReduceScatter, "gradcomm_rt_reduce_scatter_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::BufF32, Kind::I32}},
    {RuntimeFn::ReduceScatterBF16, "gradcomm_rt_reduce_scatter_bf16", true,
     Kind::I32, {Kind::Str, Kind::BufBF16, Kind::BufBF16, Kind::I32}},
    {RuntimeFn::ReduceScatterF16, "gradcomm_rt_reduce_scatter_f16", true,
     Kind::I32, {Kind::Str, Kind::BufF16, Kind::BufF16, Kind::I32}},
    {RuntimeFn::ScaleComReduceScatter,
     "gradcomm_rt_scalecom_reduce_scatter_f32", true, Kind::I32,
     {Kind::Str, Kind::BufF32, Kind::BufF32, Kind::I64, Kind::I32, Kind::I64,
      Kind::F32, Kind::I64, Kind::F32, Kind::F32, Kind::I32, Kind::I32,
      Kind::I32}},
    {RuntimeFn::ScaleComReduceScatterBF16,
     "gradcomm_rt_scalecom_reduce_scatter_bf16", true, Kind::I32,
     {Kind::Str, Kind::BufBF16, Kind::BufBF16, Kind::I64, Kind::I32, Kind::I64,
      Kind::F32, Kind::I64, Kind::F32, Kind::F32, Kind::I32, Kind::I32,
      Kind::I32}},
    {RuntimeFn::ScaleComReduceScatterF16,
     "gradcomm_rt_scalecom_reduce_scatter_f16", true, Kind::I32,
     {Kind::Str, Kind::BufF16, Kind::BufF16, Kind::I64, Kind::I32, Kind::I64,
      Kind::F32, Kind::I64, Kind::F32, Kind::F32, Kind::I32, Kind::I32,
      Kind::I32}},
    {RuntimeFn::AllGather, "gradcomm_rt_all_gather_f32", true, Kind::I32,
     {Kind::Str, Kind::BufF32, Kind::BufF32}},
    {RuntimeFn::AllGatherBF16, "gradcomm_rt_all_gather_bf16", true, Kind::I32,
     {Kind::Str, Kind::BufBF16, Kind::BufBF16}},
    {RuntimeFn::AllGatherF16, "gradcomm_rt_all_gather_f16", true, Kind::I32,
     {Kind::Str, Kind::BufF16, Kind::BufF16}},
    {RuntimeFn::LocalTopkAllGather, "gradcomm_rt_local_topk_all_gather_f32",
     true, Kind::I32, {Kind::Str, Kind::BufF32, Kind::BufF32, Kind::I64,
                       Kind::I32}},
    {RuntimeFn::LocalTopkAllGatherBF16,
     "gradcomm_rt_local_topk_all_gather_bf16", true, Kind::I32,
     {Kind::Str, Kind::BufBF16, Kind::BufBF16, Kind::I64, Kind::I32}},
    {RuntimeFn::LocalTopkAllGatherF16, "gradcomm_rt_local_topk_all_gather_f16",
     true, Kind::I32, {Kind::Str, Kind::BufF16, Kind::BufF16, Kind::I64,
                       Kind::I32}},
    {RuntimeFn::GossipExchange, "gradcomm_rt_gossip_exchange_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::I32, Kind::F32, Kind::I64,
                 Kind::I64}},
    {RuntimeFn::GossipExchangeBF16, "gradcomm_rt_gossip_exchange_bf16", true,
     Kind::I32, {Kind::Str, Kind::BufBF16, Kind::I32, Kind::F32, Kind::I64,
                 Kind::I64}},
    {RuntimeFn::GossipExchangeF16, "gradcomm_rt_gossip_exchange_f16", true,
     Kind::I32, {Kind::Str, Kind::BufF16, Kind::I32, Kind::F32, Kind::I64,
                 Kind::I64}},
    {RuntimeFn::GossipAsync, "gradcomm_rt_gossip_async_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::I32, Kind::F32, Kind::I64,
                 Kind::I64}},
    {RuntimeFn::ElasticAverage, "gradcomm_rt_elastic_average_f32", true,
     Kind::I32, {Kind::Str, Kind::BufF32, Kind::F32, Kind::I64}},
    {RuntimeFn::ElasticAverageBF16, "gradcomm_rt_elastic_average_bf16", true,
     Kind::I32, {Kind::Str, Kind::BufBF16, Kind::F32, Kind::I64}},
    {RuntimeFn::ElasticAverageF16, "gradcomm_rt_elastic_average_f16", true,
     Kind::I32, {Kind::Str, Kind::BufF16, Kind::F32, Kind::I64}},
    {RuntimeFn::ElasticAverageAsync, "gradcomm_rt_elastic_average_async_f32",
     true, Kind::I32, {Kind::Str, Kind::BufF32, Kind::F32, Kind::I64}},
    {RuntimeFn::ElasticAverageSharded,
     "gradcomm_rt_elastic_average_sharded_f32", true, Kind::I32,
     {Kind::Str, Kind::BufF32, Kind::F32, Kind::I64}},
    {RuntimeFn::Check, "gradcomm_rt_check", false, Kind::None, {Kind::I32}},
    {RuntimeFn::Record, "gradcomm_rt_record", false, Kind::None, {Kind::I32}},
    {RuntimeFn::ExpectGroupSize, "gradcomm_rt_expect_group_size", false,
     Kind::None, {Kind::I64}},
    {RuntimeFn::UseGroup, "gradcomm_rt_use_group", false, Kind::I32,
     {Kind::Str}},
    {RuntimeFn::Rank, "gradcomm_rt_rank", false, Kind::I64, {}},
    {RuntimeFn::Size, "gradcomm_rt_size", false, Kind::I64, {}},
};
// clang-format on

const RuntimeFnSpec &getSpec(RuntimeFn fn) {
  const RuntimeFnSpec &spec = kRuntimeFns[static_cast<int>(fn)];
  assert(spec.fn == fn && "kRuntimeFns is out of order");
  return spec;
}

Type typeOf(Kind kind, MLIRContext *ctx) {
  Builder b(ctx);
  switch (kind) {
  case Kind::Str:
    return LLVM::LLVMPointerType::get(ctx);
  case Kind::BufF32:
    return UnrankedMemRefType::get(b.getF32Type(), 0);
  case Kind::BufBF16:
    return UnrankedMemRefType::get(b.getBF16Type(), 0);
  case Kind::BufF16:
    return UnrankedMemRefType::get(b.getF16Type(), 0);
  case Kind::BufI64:
    return UnrankedMemRefType::get(b.getI64Type(), 0);
  case Kind::I32:
    return b.getI32Type();
  case Kind::I64:
    return b.getI64Type();
  case Kind::F32:
    return b.getF32Type();
  case Kind::None:
    break;
  }
  llvm_unreachable("no type for Kind::None");
}

FunctionType functionTypeOf(const RuntimeFnSpec &spec, MLIRContext *ctx) {
  SmallVector<Type> inputs;
  for (Kind arg : spec.args)
    inputs.push_back(typeOf(arg, ctx));
  SmallVector<Type> results;
  if (spec.result != Kind::None)
    results.push_back(typeOf(spec.result, ctx));
  return FunctionType::get(ctx, inputs, results);
}

/// The module-level symbols the conversion creates: runtime declarations
/// (one per function, with its table type) and constant strings (one per
/// distinct text, under a symbol name no other symbol has). Shared by the
/// patterns of one run of the pass.
class RuntimeSymbols {
public:
  /// `statusHandler`: the function every status goes to (Check, or Record
  /// for on-error=return).
  explicit RuntimeSymbols(ModuleOp module,
                          RuntimeFn statusHandler = RuntimeFn::Check)
      : module(module), statusHandler(statusHandler) {
    for (Operation &op : *module.getBody())
      if (auto name =
              op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
        names.insert(name.getValue());
  }

  /// The declaration of `fn`, created on first use; fails (diagnosed at
  /// `loc`) when the module defines that name with another meaning.
  FailureOr<func::FuncOp> declare(OpBuilder &builder, Location loc,
                                  RuntimeFn fn) {
    const RuntimeFnSpec &spec = getSpec(fn);
    FunctionType type = functionTypeOf(spec, builder.getContext());
    if (func::FuncOp &known = functions[spec.name])
      return known;
    if (Operation *existing = module.lookupSymbol(spec.name)) {
      auto func = dyn_cast<func::FuncOp>(existing);
      if (!func || func.getFunctionType() != type)
        return emitError(loc)
               << "the module defines '" << spec.name
               << "', which is a runtime function of type " << type;
      return functions[spec.name] = func;
    }
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto func = func::FuncOp::create(builder, loc, spec.name, type);
    func.setPrivate();
    if (spec.cInterface)
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    builder.getUnitAttr());
    names.insert(spec.name);
    return functions[spec.name] = func;
  }

  /// The NUL-terminated constant holding `text`.
  LLVM::GlobalOp string(OpBuilder &builder, Location loc, StringRef text) {
    LLVM::GlobalOp &global = strings[text];
    if (global)
      return global;
    // Symbol names are sanitized, so two texts can map to one base name
    // ("a.b" and "a_b"): a suffix keeps them apart.
    std::string base = "__gradcomm_str_" + sanitizeSymbolName(text);
    std::string symbol = base;
    for (int suffix = 1; !names.insert(symbol).second; ++suffix)
      symbol = base + "_" + std::to_string(suffix);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    std::string value = (text + Twine('\0')).str();
    auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), value.size());
    global = LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, symbol,
                                    builder.getStringAttr(value));
    return global;
  }

  RuntimeFn getStatusHandler() const { return statusHandler; }

private:
  ModuleOp module;
  RuntimeFn statusHandler;
  llvm::StringSet<> names;
  llvm::StringMap<func::FuncOp> functions;
  llvm::StringMap<LLVM::GlobalOp> strings;
};

/// Builds runtime calls at the rewriter's insertion point.
class RuntimeCalls {
public:
  RuntimeCalls(ConversionPatternRewriter &rewriter, Operation *op,
               RuntimeSymbols &symbols)
      : rewriter(rewriter), loc(op->getLoc()), symbols(symbols),
        group(op->getAttrOfType<StringAttr>(attr::kRuntimeGroup)) {}

  /// A NUL-terminated constant string as `!llvm.ptr`.
  Value string(StringRef text) {
    return LLVM::AddressOfOp::create(rewriter, loc,
                                     symbols.string(rewriter, loc, text));
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

  /// Calls `fn` (returns a status) and passes the status to the status
  /// handler: gradcomm_rt_check (stops the job if it failed) or
  /// gradcomm_rt_record (on-error=return).
  /// A collective over part of its grid runs in its group: selected
  /// before the call, every rank selected again after it.
  LogicalResult callChecked(RuntimeFn fn, ValueRange args) {
    if (group &&
        failed(callStatus(RuntimeFn::UseGroup, {string(group.getValue())})))
      return failure();
    if (failed(callStatus(fn, args)))
      return failure();
    if (group && failed(callStatus(RuntimeFn::UseGroup, {string("")})))
      return failure();
    return success();
  }

  /// Calls a runtime query returning an i64, as an index.
  FailureOr<Value> callIndex(RuntimeFn fn) {
    FailureOr<func::FuncOp> callee = symbols.declare(rewriter, loc, fn);
    if (failed(callee))
      return failure();
    Value result =
        func::CallOp::create(rewriter, loc, *callee, ValueRange()).getResult(0);
    return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                      result)
        .getResult();
  }

private:
  LogicalResult callStatus(RuntimeFn fn, ValueRange args) {
    FailureOr<func::FuncOp> callee = symbols.declare(rewriter, loc, fn);
    FailureOr<func::FuncOp> check =
        symbols.declare(rewriter, loc, symbols.getStatusHandler());
    if (failed(callee) || failed(check))
      return failure();
    assert(TypeRange(args) == callee->getFunctionType().getInputs() &&
           "arguments disagree with the runtime function table");
    auto call = func::CallOp::create(rewriter, loc, *callee, args);
    func::CallOp::create(rewriter, loc, *check, call.getResult(0));
    return success();
  }

  ConversionPatternRewriter &rewriter;
  Location loc;
  RuntimeSymbols &symbols;
  /// The op's runtime group, when it communicates over part of its grid.
  StringAttr group;
};

/// Base of the patterns: they share the run's RuntimeSymbols.
template <typename OpTy>
struct RuntimePattern : public OpConversionPattern<OpTy> {
  RuntimePattern(MLIRContext *context, std::shared_ptr<RuntimeSymbols> symbols,
                 PatternBenefit benefit = 1)
      : OpConversionPattern<OpTy>(context, benefit),
        symbols(std::move(symbols)) {}

  RuntimeCalls calls(ConversionPatternRewriter &rewriter, Operation *op) const {
    return RuntimeCalls(rewriter, op, *symbols);
  }

  std::shared_ptr<RuntimeSymbols> symbols;
};

/// The name stamped by the passes (`gradcomm-name-collectives`, the
/// rewrites) or, for IR that skipped them, by prepare().
StringRef runtimeName(Operation *op) {
  return op->getAttrOfType<StringAttr>(attr::kRuntimeName).getValue();
}

//===----------------------------------------------------------------------===//
// ScaleCom: fused, then op by op
//===----------------------------------------------------------------------===//

/// The three ops of one fused ScaleCom step: the compress, the reduction
/// of its values (a sparse_all_reduce or a sparse_reduce_scatter) and the
/// memory update.
struct FusedStep {
  Operation *reduce = nullptr;
  MemoryUpdateOp update;
};

/// `op`'s fused step: its values feed exactly one sparse reduction and its
/// indices feed that op and one memory_update of the same state and
/// gradient. Otherwise `*why` says why not.
static std::optional<FusedStep> findFusedStep(CltkCompressOp op,
                                              const char **why) {
  if (!op.getValues().hasOneUse()) {
    *why = "values used more than once";
    return std::nullopt;
  }
  FusedStep step;
  step.reduce = *op.getValues().getUsers().begin();
  if (!isa<SparseAllReduceOp, SparseReduceScatterOp>(step.reduce) ||
      step.reduce->getOperand(1) != op.getIndices()) {
    *why = "no matching sparse reduction";
    return std::nullopt;
  }
  for (Operation *user : op.getIndices().getUsers()) {
    if (user == step.reduce)
      continue;
    auto candidate = dyn_cast<MemoryUpdateOp>(user);
    if (!candidate || step.update || candidate.getState() != op.getState() ||
        candidate.getInput() != op.getInput()) {
      *why = "indices used elsewhere";
      return std::nullopt;
    }
    step.update = candidate;
  }
  if (!step.update) {
    *why = "no memory_update";
    return std::nullopt;
  }
  return step;
}

static FailureOr<FusedStep>
matchFusedStep(CltkCompressOp op, ConversionPatternRewriter &rewriter) {
  const char *why = "";
  if (std::optional<FusedStep> step = findFusedStep(op, &why))
    return *step;
  return rewriter.notifyMatchFailure(op, why);
}

/// The element type of a tensor.
static Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

/// A bf16 or f16 element type.
static bool isHalf(Type element) { return element.isBF16() || element.isF16(); }

/// The runtime call for tensors of `element`: f32, bf16 or f16.
static RuntimeFn forElement(Type element, RuntimeFn f32, RuntimeFn bf16,
                            RuntimeFn f16) {
  return element.isBF16() ? bf16 : element.isF16() ? f16 : f32;
}

/// cltk_compress in a fused step with a sparse_reduce_scatter: one call of
/// the compressed reduce-scatter (the recipe's dense warm-up, clipping,
/// momentum correction and a kept-dense gradient's call included).
static LogicalResult
lowerFusedReduceScatter(CltkCompressOp op, CltkCompressOp::Adaptor adaptor,
                        SparseReduceScatterOp reduce, MemoryUpdateOp update,
                        RuntimeCalls &rt, ConversionPatternRewriter &rewriter) {
  // prepare() refused a ramp warm-up here.
  assert(!op.getWarmupRampFromAttr() && "a ramp into a reduce-scatter");
  Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
  Value shard = rt.allocate(reduce.getResult().getType());
  int64_t chunkSize = op.getChunkSize() ? int64_t(*op.getChunkSize()) : 0;
  // A 16-bit gradient's selected values travel in its 16 bits.
  if (failed(rt.callChecked(
          forElement(elementTypeOf(op.getInput()),
                     RuntimeFn::ScaleComReduceScatter,
                     RuntimeFn::ScaleComReduceScatterBF16,
                     RuntimeFn::ScaleComReduceScatterF16),
          {rt.string(op.getState()), rt.unranked(grad), rt.unranked(shard),
           rt.i64(op.getKAttr().getInt()),
           rt.i32(static_cast<int32_t>(op.getSelection())), rt.i64(chunkSize),
           rt.f32(update.getBeta().convertToDouble()),
           rt.i64(op.getWarmupSteps().value_or(0)),
           rt.f32(op.getClipAttr() ? op.getClipAttr().getValueAsDouble() : 0.0),
           rt.f32(op.getMomentumAttr() ? op.getMomentumAttr().getValueAsDouble()
                                       : 0.0),
           rt.i32(op.getNesterov() ? 1 : 0), rt.i32(op.getDense() ? 1 : 0),
           rt.i32(static_cast<int32_t>(reduce.getReduction()))})))
    return failure();
  rewriter.replaceOp(reduce, rt.toTensor(shard, reduce.getResult().getType()));
  rewriter.eraseOp(update);
  rewriter.eraseOp(op);
  return success();
}

/// cltk_compress in a fused step: one fused runtime call.
struct FusedScaleComPattern : public RuntimePattern<CltkCompressOp> {
  FusedScaleComPattern(MLIRContext *context,
                       std::shared_ptr<RuntimeSymbols> symbols)
      : RuntimePattern(context, std::move(symbols), /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(CltkCompressOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<FusedStep> step = matchFusedStep(op, rewriter);
    if (failed(step))
      return failure();
    MemoryUpdateOp update = step->update;
    RuntimeCalls rt = calls(rewriter, op);
    if (auto scatter = dyn_cast<SparseReduceScatterOp>(step->reduce))
      return lowerFusedReduceScatter(op, adaptor, scatter, update, rt,
                                     rewriter);
    auto reduce = cast<SparseAllReduceOp>(step->reduce);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value out = rt.allocate(reduce.getResult().getType());
    int64_t chunkSize = op.getChunkSize() ? int64_t(*op.getChunkSize()) : 0;
    SmallVector<Value> args = {rt.string(op.getState()),
                               rt.unranked(grad),
                               rt.unranked(out),
                               rt.i64(op.getKAttr().getInt()),
                               rt.i32(static_cast<int32_t>(op.getSelection())),
                               rt.i64(chunkSize),
                               rt.f32(update.getBeta().convertToDouble())};
    // A 16-bit gradient (prepare() kept it to this fused step): the recipe's
    // call for its type, which sends the values in those 16 bits.
    Type element = elementTypeOf(op.getInput());
    const bool half = isHalf(element);
    RuntimeFn fn = RuntimeFn::ScaleCom;
    if (op.hasRecipe() || half) {
      // warmup_ramp_from 0: a dense warm-up; clip and momentum 0: off.
      fn = forElement(element, RuntimeFn::ScaleComRecipe,
                      RuntimeFn::ScaleComRecipeBF16,
                      RuntimeFn::ScaleComRecipeF16);
      auto valueOr0 = [](FloatAttr attr) {
        return attr ? attr.getValueAsDouble() : 0.0;
      };
      args.push_back(rt.i64(op.getWarmupSteps().value_or(0)));
      args.push_back(rt.f32(valueOr0(op.getWarmupRampFromAttr())));
      args.push_back(rt.f32(valueOr0(op.getClipAttr())));
      args.push_back(rt.f32(valueOr0(op.getMomentumAttr())));
      args.push_back(rt.i32(op.getNesterov() ? 1 : 0));
      args.push_back(rt.i32(op.getDense() ? 1 : 0));
    }
    args.push_back(rt.i32(static_cast<int32_t>(reduce.getReduction())));
    if (failed(rt.callChecked(fn, args)))
      return failure();
    Value result = rt.toTensor(out, reduce.getResult().getType());
    rewriter.replaceOp(reduce, result);
    rewriter.eraseOp(update);
    rewriter.eraseOp(op);
    return success();
  }
};

struct CltkCompressPattern : public RuntimePattern<CltkCompressOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(CltkCompressOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.hasRecipe())
      return op.emitOpError(
          "with the training recipe (warmup_steps, warmup_ramp_from, clip, "
          "momentum, dense) lowers only as the fused step: its values must "
          "feed one "
          "sparse_all_reduce and its indices that op and one memory_update "
          "of the same state and gradient");
    RuntimeCalls rt = calls(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value values = rt.allocate(op.getValues().getType());
    Value indices = rt.allocate(op.getIndices().getType());
    int64_t chunkSize = op.getChunkSize() ? int64_t(*op.getChunkSize()) : 0;
    if (failed(rt.callChecked(RuntimeFn::CltkCompress,
                              {rt.string(op.getState()), rt.unranked(grad),
                               rt.i64(op.getKAttr().getInt()),
                               rt.i32(static_cast<int32_t>(op.getSelection())),
                               rt.i64(chunkSize), rt.unranked(values),
                               rt.unranked(indices)})))
      return failure();
    rewriter.replaceOp(op, {rt.toTensor(values, op.getValues().getType()),
                            rt.toTensor(indices, op.getIndices().getType())});
    return success();
  }
};

struct SparseAllReducePattern : public RuntimePattern<SparseAllReduceOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(SparseAllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    Value values = rt.buffer(adaptor.getValues(), /*readOnly=*/true);
    Value indices = rt.buffer(adaptor.getIndices(), /*readOnly=*/true);
    Value out = rt.allocate(op.getResult().getType());
    if (failed(
            rt.callChecked(RuntimeFn::SparseAllReduce,
                           {rt.string(runtimeName(op)), rt.unranked(values),
                            rt.unranked(indices), rt.unranked(out),
                            rt.i32(static_cast<int32_t>(op.getReduction()))})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(out, op.getResult().getType()));
    return success();
  }
};

/// The runtime reduce-scatters the selected values inside the compressed
/// step's one call; a sparse_reduce_scatter outside that step has no call.
struct SparseReduceScatterPattern
    : public RuntimePattern<SparseReduceScatterOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(SparseReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return op.emitOpError(
        "lowers only as part of the fused step: its values must come from a "
        "cltk_compress whose indices feed this op and one memory_update of "
        "the same state and gradient");
  }
};

struct MemoryUpdatePattern : public RuntimePattern<MemoryUpdateOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(MemoryUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value indices = rt.buffer(adaptor.getIndices(), /*readOnly=*/true);
    if (failed(rt.callChecked(RuntimeFn::MemoryUpdate,
                              {rt.string(op.getState()), rt.unranked(grad),
                               rt.unranked(indices),
                               rt.f32(op.getBeta().convertToDouble())})))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Baseline, gossip, dense all-reduce
//===----------------------------------------------------------------------===//

struct LocalTopkPattern : public RuntimePattern<LocalTopkAllGatherOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(LocalTopkAllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    Value grad = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value out = rt.allocate(op.getResult().getType());
    if (failed(
            rt.callChecked(forElement(elementTypeOf(op.getInput()),
                                      RuntimeFn::LocalTopkAllGather,
                                      RuntimeFn::LocalTopkAllGatherBF16,
                                      RuntimeFn::LocalTopkAllGatherF16),
                           {rt.string(op.getState()), rt.unranked(grad),
                            rt.unranked(out), rt.i64(op.getKAttr().getInt()),
                            rt.i32(static_cast<int32_t>(op.getReduction()))})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(out, op.getResult().getType()));
    return success();
  }
};

struct GossipExchangePattern : public RuntimePattern<GossipExchangeOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(GossipExchangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    // Mixed in place: the input's buffer when nothing reads it later.
    Value x = rt.buffer(adaptor.getInput(), /*readOnly=*/false);
    // A 16-bit replica (sync only: the verifier) is exchanged in its bits.
    Type element = elementTypeOf(op.getInput());
    RuntimeFn fn = op.getMode() == ExchangeMode::Async
                       ? RuntimeFn::GossipAsync
                       : forElement(element, RuntimeFn::GossipExchange,
                                    RuntimeFn::GossipExchangeBF16,
                                    RuntimeFn::GossipExchangeF16);
    if (failed(
            rt.callChecked(fn, {rt.string(op.getState()), rt.unranked(x),
                                rt.i32(static_cast<int32_t>(op.getSchedule())),
                                rt.f32(op.getMixing().convertToDouble()),
                                rt.i64(op.getSeedAttr().getInt()),
                                rt.i64(op.getPeriodAttr().getInt())})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(x, op.getResult().getType()));
    return success();
  }
};

struct ElasticAveragePattern : public RuntimePattern<ElasticAverageOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(ElasticAverageOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    // Pulled toward the center in place: the input's buffer when nothing
    // reads it later.
    Value x = rt.buffer(adaptor.getInput(), /*readOnly=*/false);
    Type element = elementTypeOf(op.getInput());
    RuntimeFn fn =
        forElement(element, RuntimeFn::ElasticAverage,
                   RuntimeFn::ElasticAverageBF16, RuntimeFn::ElasticAverageF16);
    if (op.getMode() == ExchangeMode::Async)
      fn = op.getCenter() == CenterPlacement::Sharded
               ? RuntimeFn::ElasticAverageSharded
               : RuntimeFn::ElasticAverageAsync;
    if (failed(rt.callChecked(fn, {rt.string(op.getState()), rt.unranked(x),
                                   rt.f32(op.getAlpha().convertToDouble()),
                                   rt.i64(op.getPeriodAttr().getInt())})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(x, op.getResult().getType()));
    return success();
  }
};

/// The runtime's reduction for a shard collective's (prepare() let only sum
/// and average through).
int32_t runtimeReduction(shard::ReductionKind kind) {
  return static_cast<int32_t>(kind == shard::ReductionKind::Average
                                  ? Reduction::Average
                                  : Reduction::Sum);
}

struct DenseAllReducePattern : public RuntimePattern<shard::AllReduceOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    // Reduced in place: the input's buffer when nothing reads it later.
    Value data = rt.buffer(adaptor.getInput(), /*readOnly=*/false);
    int32_t reduction = runtimeReduction(op.getReduction());
    Type element = elementTypeOf(op.getInput());
    RuntimeFn fn =
        forElement(element, RuntimeFn::DenseAllReduce,
                   RuntimeFn::DenseAllReduceBF16, RuntimeFn::DenseAllReduceF16);
    if (failed(rt.callChecked(fn, {rt.string(runtimeName(op)),
                                   rt.unranked(data), rt.i32(reduction)})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(data, op.getResult().getType()));
    return success();
  }
};

/// The dense reduce-scatter: the input's buffer is only read, the shard is
/// a fresh one (prepare() checked the types).
struct DenseReduceScatterPattern
    : public RuntimePattern<shard::ReduceScatterOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::ReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    Value data = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value shard = rt.allocate(op.getResult().getType());
    int32_t reduction = runtimeReduction(op.getReduction());
    if (failed(rt.callChecked(forElement(elementTypeOf(op.getInput()),
                                         RuntimeFn::ReduceScatter,
                                         RuntimeFn::ReduceScatterBF16,
                                         RuntimeFn::ReduceScatterF16),
                              {rt.string(runtimeName(op)), rt.unranked(data),
                               rt.unranked(shard), rt.i32(reduction)})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(shard, op.getResult().getType()));
    return success();
  }
};

/// The parameter all-gather: the shard's buffer is only read, the whole
/// parameter is a fresh one (prepare() checked the types).
struct AllGatherPattern : public RuntimePattern<shard::AllGatherOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    Value shard = rt.buffer(adaptor.getInput(), /*readOnly=*/true);
    Value whole = rt.allocate(op.getResult().getType());
    if (failed(rt.callChecked(
            forElement(elementTypeOf(op.getInput()), RuntimeFn::AllGather,
                       RuntimeFn::AllGatherBF16, RuntimeFn::AllGatherF16),
            {rt.string(runtimeName(op)), rt.unranked(shard),
             rt.unranked(whole)})))
      return failure();
    rewriter.replaceOp(op, rt.toTensor(whole, op.getResult().getType()));
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

struct ProcessMultiIndexPattern
    : public RuntimePattern<shard::ProcessMultiIndexOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::ProcessMultiIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    RuntimeCalls rt = calls(rewriter, op);
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t axis = 0; axis < grid.getRank(); ++axis)
        axes.push_back(axis);
    SmallVector<Value> results;
    Location loc = op.getLoc();
    ArrayRef<int64_t> shape = grid.getShape();
    bool severalAxes =
        llvm::count_if(shape, [](int64_t size) { return size != 1; }) > 1;
    if (severalAxes && llvm::any_of(shape, ShapedType::isDynamic))
      return op.emitOpError()
             << "cannot be lowered to the runtime: grid " << op.getGridAttr()
             << " has several axes with more than one process and a dynamic "
                "size";
    for (int64_t axis : axes) {
      if (shape[axis] == 1) {
        results.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
        continue;
      }
      FailureOr<Value> rank = rt.callIndex(RuntimeFn::Rank);
      if (failed(rank))
        return failure();
      if (!severalAxes) {
        results.push_back(*rank);
        continue;
      }
      // Row-major: coordinate = (rank / (product of the later axes)) mod
      // (this axis' size).
      int64_t stride = 1;
      for (int64_t later = axis + 1; later < grid.getRank(); ++later)
        stride *= shape[later];
      Value strideValue = arith::ConstantIndexOp::create(rewriter, loc, stride);
      Value sizeValue =
          arith::ConstantIndexOp::create(rewriter, loc, shape[axis]);
      Value quotient =
          arith::DivUIOp::create(rewriter, loc, *rank, strideValue);
      results.push_back(
          arith::RemUIOp::create(rewriter, loc, quotient, sizeValue));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ProcessLinearIndexPattern
    : public RuntimePattern<shard::ProcessLinearIndexOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::ProcessLinearIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RuntimeCalls rt = calls(rewriter, op);
    FailureOr<Value> rank = rt.callIndex(RuntimeFn::Rank);
    if (failed(rank))
      return failure();
    rewriter.replaceOp(op, *rank);
    return success();
  }
};

struct GridShapePattern : public RuntimePattern<shard::GridShapeOp> {
  using RuntimePattern::RuntimePattern;
  LogicalResult
  matchAndRewrite(shard::GridShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    RuntimeCalls rt = calls(rewriter, op);
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t axis = 0; axis < grid.getRank(); ++axis)
        axes.push_back(axis);
    SmallVector<Value> results;
    for (int64_t axis : axes) {
      int64_t size = grid.getShape()[axis];
      if (!ShapedType::isDynamic(size)) {
        results.push_back(
            arith::ConstantIndexOp::create(rewriter, op.getLoc(), size));
        continue;
      }
      FailureOr<Value> dynamicSize = rt.callIndex(RuntimeFn::Size);
      if (failed(dynamicSize))
        return failure();
      results.push_back(*dynamicSize);
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
    if (onError != "abort" && onError != "return") {
      emitError(getOperation().getLoc())
          << "convert-gradcomm-to-runtime: on-error must be 'abort' or "
             "'return', got '"
          << onError << "'";
      return signalPassFailure();
    }
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
    // on-error=return: statuses go to gradcomm_rt_record instead of
    // gradcomm_rt_check; gradcomm-guard-failed-steps, after bufferization,
    // keeps the rest of a failed step from writing memory.
    populateGradCommToRuntimeConversionPatterns(patterns, getOperation(),
                                                onError == "return");
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

void mlir::gradcomm::populateGradCommToRuntimeConversionPatterns(
    RewritePatternSet &patterns, ModuleOp module, bool recordStatuses) {
  MLIRContext *context = patterns.getContext();
  auto symbols = std::make_shared<RuntimeSymbols>(
      module, recordStatuses ? RuntimeFn::Record : RuntimeFn::Check);
  patterns.add<
      FusedScaleComPattern, CltkCompressPattern, SparseAllReducePattern,
      SparseReduceScatterPattern, MemoryUpdatePattern, LocalTopkPattern,
      GossipExchangePattern, ElasticAveragePattern, DenseAllReducePattern,
      DenseReduceScatterPattern, AllGatherPattern, ProcessMultiIndexPattern,
      ProcessLinearIndexPattern, GridShapePattern>(context, symbols);
  patterns.add<EraseDeclarationPattern<StateOp>,
               EraseDeclarationPattern<shard::GridOp>>(context);
}

/// Where a collective runs: the processes of its grid (kDynamic if
/// unknown), which the job must have, and the runtime group spec ("2x2:0")
/// when it communicates over part of the grid (empty: every rank).
struct CollectiveGroup {
  int64_t gridProcesses = ShapedType::kDynamic;
  std::string spec;
};

/// The group of a collective over `axes` of `gridRef`. Communicating over
/// part of a grid needs its shape: the runtime splits the job by the
/// coordinates outside the axes.
static FailureOr<CollectiveGroup> collectiveGroup(Operation *op,
                                                  FlatSymbolRefAttr gridRef,
                                                  ArrayRef<int16_t> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridRef);
  if (!grid)
    return op->emitOpError("refers to a missing grid");
  CollectiveGroup group;
  bool dynamic = false, partial = false;
  int64_t processes = 1;
  for (auto [axis, axisSize] : llvm::enumerate(grid.getShape())) {
    bool reduced = llvm::is_contained(axes, static_cast<int16_t>(axis));
    if (ShapedType::isDynamic(axisSize))
      dynamic = true;
    else
      processes *= axisSize;
    if (!reduced && axisSize != 1)
      partial = true;
  }
  if (!dynamic)
    group.gridProcesses = processes;
  if (!partial)
    return group;
  if (dynamic)
    return op->emitOpError()
           << "communicates over part of grid " << gridRef
           << ", whose shape is not static; the runtime forms the group from "
              "the grid's shape, so give every axis a size";
  llvm::raw_string_ostream spec(group.spec);
  llvm::interleave(grid.getShape(), spec, "x");
  spec << ":";
  SmallVector<int16_t> sorted(axes);
  llvm::sort(sorted);
  llvm::interleave(sorted, spec, ",");
  return group;
}

/// A sharded collective the runtime takes: static f32, bf16 or f16 tensors
/// (input and result of one type), cut (or joined) along axis 0, whose
/// shards are runs of the flat buffer. Diagnosed; `verb` and `axisName` say
/// which collective.
static LogicalResult checkShardedCollective(Operation *op, Value input,
                                            Value result, uint64_t axis,
                                            StringRef verb,
                                            StringRef axisName) {
  auto in = dyn_cast<RankedTensorType>(input.getType());
  auto out = dyn_cast<RankedTensorType>(result.getType());
  if (!in || !out ||
      !(in.getElementType().isF32() || isHalf(in.getElementType())) ||
      out.getElementType() != in.getElementType() || !in.hasStaticShape() ||
      !out.hasStaticShape())
    return op->emitOpError()
           << "cannot be lowered to the runtime: it " << verb
           << " static f32, bf16 or f16 tensors only, input and result of one "
              "type (input "
           << input.getType() << ", result " << result.getType() << ")";
  if (axis != 0)
    return op->emitOpError()
           << "cannot be lowered to the runtime: it " << axisName
           << " along axis " << axis
           << "; the runtime's shards are runs of the flat buffer (axis 0)";
  return success();
}

/// The dense reduce-scatter: sum or average too. Diagnosed.
static LogicalResult checkLowerable(shard::ReduceScatterOp op) {
  if (failed(checkShardedCollective(op, op.getInput(), op.getResult(),
                                    op.getScatterAxis().getZExtValue(),
                                    "reduce-scatters", "scatters")))
    return failure();
  if (op.getReduction() != shard::ReductionKind::Sum &&
      op.getReduction() != shard::ReductionKind::Average)
    return op.emitOpError() << "cannot be lowered to the runtime: reduction '"
                            << shard::stringifyReductionKind(op.getReduction())
                            << "' (sum and average only)";
  return success();
}

static LogicalResult checkLowerable(shard::AllGatherOp op) {
  return checkShardedCollective(op, op.getInput(), op.getResult(),
                                op.getGatherAxis().getZExtValue(),
                                "all-gathers", "gathers");
}

/// A sparse_all_reduce, sparse_reduce_scatter or memory_update with a
/// 16-bit tensor (`type`) has no call of its own: it must be part of the
/// fused step of the cltk_compress that defines `fromCompress` (its values
/// or indices), whose gradient has that element type. Diagnosed.
static LogicalResult checkHalfInFusedStep(Operation *op, Value fromCompress,
                                          Type type) {
  if (!isHalf(cast<RankedTensorType>(type).getElementType()))
    return success();
  auto compress = fromCompress.getDefiningOp<CltkCompressOp>();
  const char *why = "its operand is not a cltk_compress result";
  std::optional<FusedStep> fused;
  if (compress)
    fused = findFusedStep(compress, &why);
  if (fused &&
      elementTypeOf(compress.getInput()) ==
          cast<RankedTensorType>(type).getElementType() &&
      (fused->reduce == op || fused->update == op))
    return success();
  if (fused)
    why = "the cltk_compress gradient's element type differs";
  return op->emitOpError()
         << "with a bf16 or f16 tensor lowers only as part of the fused step "
            "of a cltk_compress of that type ("
         << why << ")";
}

LogicalResult ConvertGradCommToRuntimePass::prepare() {
  ModuleOp module = getOperation();
  // A symbol with a runtime function's name and another meaning would turn
  // every call into a call of the wrong thing: refuse it up front.
  for (const RuntimeFnSpec &spec : kRuntimeFns) {
    Operation *existing = module.lookupSymbol(spec.name);
    if (!existing)
      continue;
    FunctionType type = functionTypeOf(spec, &getContext());
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return existing->emitError()
             << "'" << spec.name << "' is a GradComm runtime function of type "
             << type << "; the module defines it otherwise";
  }
  RuntimeSymbols symbols(module);
  bool ok = true;
  Builder b(&getContext());
  module.walk([&](FunctionOpInterface func) {
    llvm::SmallSetVector<int64_t, 2> groupSizes;
    int64_t counter = 0;
    func.walk([&](Operation *op) {
      FailureOr<CollectiveGroup> group = failure();
      std::string name;
      if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
        auto type = dyn_cast<RankedTensorType>(reduce.getInput().getType());
        if (!type ||
            !(type.getElementType().isF32() || isHalf(type.getElementType())) ||
            reduce.getResult().getType() != type) {
          op->emitOpError() << "cannot be lowered to the runtime: it reduces "
                               "f32, bf16 or f16 tensors only (input "
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
        group = collectiveGroup(op, reduce.getGridAttr(), reduce.getGridAxes());
        name = (func.getName() + "_all_reduce_" + Twine(counter)).str();
      } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
        if (failed(checkLowerable(scatter))) {
          ok = false;
          return;
        }
        group =
            collectiveGroup(op, scatter.getGridAttr(), scatter.getGridAxes());
        name = (func.getName() + "_reduce_scatter_" + Twine(counter)).str();
      } else if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
        if (failed(checkLowerable(gather))) {
          ok = false;
          return;
        }
        group = collectiveGroup(op, gather.getGridAttr(), gather.getGridAxes());
        name = (func.getName() + "_all_gather_" + Twine(counter)).str();
      } else if (auto sparse = dyn_cast<SparseAllReduceOp>(op)) {
        if (failed(checkHalfInFusedStep(op, sparse.getValues(),
                                        sparse.getResult().getType()))) {
          ok = false;
          return;
        }
        group = collectiveGroup(op, sparse.getGridAttr(), sparse.getGridAxes());
        name = (func.getName() + "_sparse_all_reduce_" + Twine(counter)).str();
      } else if (auto sparse = dyn_cast<SparseReduceScatterOp>(op)) {
        if (failed(checkHalfInFusedStep(op, sparse.getValues(),
                                        sparse.getResult().getType()))) {
          ok = false;
          return;
        }
        group = collectiveGroup(op, sparse.getGridAttr(), sparse.getGridAxes());
        name =
            (func.getName() + "_sparse_reduce_scatter_" + Twine(counter)).str();
      } else if (auto compress = dyn_cast<CltkCompressOp>(op)) {
        const char *why = "";
        std::optional<FusedStep> fused = findFusedStep(compress, &why);
        Type element = elementTypeOf(compress.getInput());
        if (isHalf(element) &&
            (!fused || elementTypeOf(fused->reduce->getResult(0)) != element)) {
          compress.emitOpError()
              << "with a bf16 or f16 gradient lowers only as the fused step "
                 "with a reduction of its element type ("
              << (fused ? "the reduction's result differs" : why) << ")";
          ok = false;
          return;
        }
        if (compress.getWarmupRampFromAttr() &&
            llvm::any_of(compress.getValues().getUsers(),
                         llvm::IsaPred<SparseReduceScatterOp>)) {
          compress.emitOpError()
              << "feeds a sparse_reduce_scatter, whose runtime call has a "
                 "dense warm-up only ('warmup_ramp_from' is not built for it)";
          ok = false;
          return;
        }
        group =
            collectiveGroup(op, compress.getGridAttr(), compress.getGridAxes());
      } else if (auto local = dyn_cast<LocalTopkAllGatherOp>(op)) {
        group = collectiveGroup(op, local.getGridAttr(), local.getGridAxes());
      } else if (auto gossip = dyn_cast<GossipExchangeOp>(op)) {
        group = collectiveGroup(op, gossip.getGridAttr(), gossip.getGridAxes());
      } else if (auto elastic = dyn_cast<ElasticAverageOp>(op)) {
        group =
            collectiveGroup(op, elastic.getGridAttr(), elastic.getGridAxes());
      } else {
        if (auto update = dyn_cast<MemoryUpdateOp>(op))
          if (failed(checkHalfInFusedStep(op, update.getIndices(),
                                          update.getInput().getType())))
            ok = false;
        return;
      }
      ++counter;
      if (failed(group)) {
        ok = false;
        return;
      }
      if (!ShapedType::isDynamic(group->gridProcesses))
        groupSizes.insert(group->gridProcesses);
      if (!group->spec.empty())
        op->setAttr(attr::kRuntimeGroup, b.getStringAttr(group->spec));
      // IR that skipped gradcomm-name-collectives gets positional names.
      if (!name.empty() && !op->hasAttr(attr::kRuntimeName))
        op->setAttr(attr::kRuntimeName, b.getStringAttr(name));
    });
    if (groupSizes.empty() || func.isExternal())
      return;
    // The step is only valid on the group size it was compiled for.
    OpBuilder builder =
        OpBuilder::atBlockBegin(&func.getFunctionBody().front());
    FailureOr<func::FuncOp> callee =
        symbols.declare(builder, func.getLoc(), RuntimeFn::ExpectGroupSize);
    if (failed(callee)) {
      ok = false;
      return;
    }
    for (int64_t size : groupSizes) {
      Value expected =
          arith::ConstantIntOp::create(builder, func.getLoc(), size, 64);
      func::CallOp::create(builder, func.getLoc(), *callee, expected);
    }
  });
  return success(ok);
}
