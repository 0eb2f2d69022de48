//===- GradientAnalysis.cpp - Which all-reduces are gradients -------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/Transforms/GradientAnalysis.h"

#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gradcomm;

/// The function argument `value` is, if it is one of the entry block of the
/// function that encloses it.
static BlockArgument asFunctionArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return nullptr;
  Operation *parent = arg.getOwner()->getParentOp();
  if (!isa_and_nonnull<FunctionOpInterface>(parent) ||
      !arg.getOwner()->isEntryBlock())
    return nullptr;
  return arg;
}

/// True for ops that map tensors elementwise: results depend on operands
/// only at the same position.
static bool isElementwiseOp(Operation *op) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalg::isElementwise(linalgOp);
  return op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() > 0;
}

/// Does `use` carry data into its elementwise user? (A linalg `outs`
/// operand only does when the payload reads it.)
static bool useCarriesData(OpOperand &use) {
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(use.getOwner()))
    return linalgOp.isDpsInput(&use) ||
           linalgOp.payloadUsesValueFromOperand(&use);
  return true;
}

/// Float tensors of one shape: a gradient and what it updates, whose
/// element types may differ in mixed precision (a bf16 gradient widened
/// into an f32 master weight's update).
static bool sameFloatShape(Type a, Type b) {
  auto x = dyn_cast<RankedTensorType>(a), y = dyn_cast<RankedTensorType>(b);
  return x && y && x.getShape() == y.getShape() &&
         isa<FloatType>(x.getElementType()) &&
         isa<FloatType>(y.getElementType());
}

/// Searches backwards from `value` through elementwise ops (a few levels,
/// enough for decay terms) for a function argument shaped like `type`.
static BlockArgument findParameter(Value value, Type type, int depth) {
  if (BlockArgument arg = asFunctionArgument(value))
    return sameFloatShape(arg.getType(), type) ? arg : nullptr;
  Operation *def = value.getDefiningOp();
  if (!def || depth == 0 || !isElementwiseOp(def))
    return nullptr;
  for (OpOperand &operand : def->getOpOperands())
    if (useCarriesData(operand))
      if (BlockArgument arg = findParameter(operand.get(), type, depth - 1))
        return arg;
  return nullptr;
}

/// The function's own return (a use there is a result of the step).
static bool isFunctionReturn(Operation *op) {
  return op->hasTrait<OpTrait::ReturnLike>() &&
         isa_and_nonnull<FunctionOpInterface>(op->getParentOp());
}

static bool hasParameterName(BlockArgument parameter) {
  auto func = cast<FunctionOpInterface>(parameter.getOwner()->getParentOp());
  return static_cast<bool>(
      func.getArgAttrOfType<StringAttr>(parameter.getArgNumber(), attr::kName));
}

GradientUse mlir::gradcomm::analyzeGradient(Value reduced) {
  constexpr int kParameterSearchDepth = 8;
  Type type = reduced.getType();
  // (value on the elementwise path, parameter met so far on that path)
  SmallVector<std::pair<Value, BlockArgument>> worklist = {{reduced, nullptr}};
  llvm::DenseSet<Value> visited;
  // An update of an unnamed argument (an optimizer's momentum buffer: `buf =
  // m * buf + g` is returned too) only counts when no named parameter is
  // updated from the same gradient.
  GradientUse unnamed;
  while (!worklist.empty()) {
    auto [value, parameter] = worklist.pop_back_val();
    if (!visited.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isFunctionReturn(user)) {
        if (parameter && hasParameterName(parameter))
          return {true, parameter, &use};
        if (parameter && !unnamed.isGradient)
          unnamed = {true, parameter, &use};
        continue;
      }
      if (!isElementwiseOp(user) || !useCarriesData(use))
        continue;
      // The parameter met closest to the return wins: in
      // `w - lr * g` it is `w`, not a same-typed `lr` argument.
      BlockArgument found;
      for (OpOperand &other : user->getOpOperands()) {
        if (found)
          break;
        if (&other != &use && useCarriesData(other))
          found = findParameter(other.get(), type, kParameterSearchDepth);
      }
      for (Value result : user->getResults())
        if (sameFloatShape(result.getType(), type))
          worklist.push_back({result, found ? found : parameter});
    }
  }
  return unnamed;
}

int64_t mlir::gradcomm::countReturnedUpdates(Value reduced) {
  Type type = reduced.getType();
  SmallVector<Value> worklist = {reduced};
  llvm::DenseSet<Value> visited;
  llvm::SmallDenseSet<OpOperand *> returned;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!visited.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isFunctionReturn(user)) {
        returned.insert(&use);
        continue;
      }
      if (!isElementwiseOp(user) || !useCarriesData(use))
        continue;
      for (Value result : user->getResults())
        if (sameFloatShape(result.getType(), type))
          worklist.push_back(result);
    }
  }
  return static_cast<int64_t>(returned.size());
}

std::string mlir::gradcomm::parameterName(BlockArgument parameter) {
  auto func = cast<FunctionOpInterface>(parameter.getOwner()->getParentOp());
  if (auto name = func.getArgAttrOfType<StringAttr>(parameter.getArgNumber(),
                                                    attr::kName))
    return name.str();
  return (func.getName() + "_arg" + Twine(parameter.getArgNumber())).str();
}

/// Why a collective over grid `axes` is not one a rewrite takes (exactly
/// one axis), or nullopt.
static std::optional<std::string> whyNotOneAxis(ArrayRef<int16_t> axes) {
  if (axes.size() != 1)
    return ("reduces over " + Twine(axes.size()) +
            " grid axes; exactly one is needed")
        .str();
  return std::nullopt;
}

/// The reduction kind's part: sum or average.
static std::optional<std::string>
whyNotGradientKind(shard::ReductionKind kind) {
  if (kind != shard::ReductionKind::Sum &&
      kind != shard::ReductionKind::Average)
    return ("reduction '" + shard::stringifyReductionKind(kind) +
            "' is not a gradient reduction (sum or average)")
        .str();
  return std::nullopt;
}

/// The input's part: a static floating-point tensor.
static std::optional<std::string> whyNotStaticFloat(RankedTensorType type) {
  if (!type.hasStaticShape())
    return std::string("dynamic shape");
  if (!isa<FloatType>(type.getElementType()))
    return std::string("element type is not floating point");
  return std::nullopt;
}

static std::optional<std::string> whyNotAllReduce(shard::AllReduceOp op) {
  if (auto why = whyNotGradientKind(op.getReduction()))
    return why;
  auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!type || op.getResult().getType() != type)
    return std::string(
        "not a tensor all-reduce with equal input and result types");
  if (auto why = whyNotStaticFloat(type))
    return why;
  return whyNotOneAxis(op.getGridAxes());
}

static std::optional<std::string>
whyNotReduceScatter(shard::ReduceScatterOp op) {
  if (auto why = whyNotGradientKind(op.getReduction()))
    return why;
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (auto why = whyNotStaticFloat(type))
    return why;
  if (auto why = whyNotOneAxis(op.getGridAxes()))
    return why;
  if (op.getScatterAxis().getZExtValue() != 0)
    return ("scatters along axis " + Twine(op.getScatterAxis().getZExtValue()) +
            "; only axis 0 (one contiguous run of the flat gradient per "
            "shard) is compressed")
        .str();
  int64_t groupSize = reducedGroupSize(op);
  if (ShapedType::isDynamic(groupSize))
    return std::string("the grid axis has no static size (the shard's "
                       "extent is needed at compile time)");
  SmallVector<int64_t> shardShape(type.getShape());
  if (shardShape[0] % groupSize != 0)
    return ("dimension 0 (" + Twine(shardShape[0]) +
            ") does not divide among " + Twine(groupSize) + " ranks")
        .str();
  shardShape[0] /= groupSize;
  auto shardType = RankedTensorType::get(shardShape, type.getElementType());
  if (op.getResult().getType() != shardType)
    return ("the result is not the input's shard along axis 0 (expected " +
            llvm::formatv("{0}", shardType) + ")")
        .str();
  return std::nullopt;
}

std::optional<std::string> mlir::gradcomm::whyNotRewritable(Operation *op) {
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op))
    return whyNotAllReduce(reduce);
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
    return whyNotReduceScatter(scatter);
  return ("'" + op->getName().getStringRef() +
          "' is not a gradient reduction the rewrites take")
      .str();
}

Value mlir::gradcomm::reducedInput(Operation *op) {
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op))
    return reduce.getInput();
  return cast<shard::ReduceScatterOp>(op).getInput();
}

void mlir::gradcomm::insertDeclaration(SymbolTable &symbolTable,
                                       Operation *op) {
  Block &body = symbolTable.getOp()->getRegion(0).front();
  auto firstOther = llvm::find_if(body, [](Operation &declaration) {
    return !isa<shard::GridOp, StateOp>(declaration);
  });
  symbolTable.insert(op, firstOther);
}

FailureOr<RewriteDecision>
mlir::gradcomm::decideRewrite(Operation *op, Policy policy,
                              const RewriteFilter &filter, StringRef passName) {
  RewriteDecision decision;
  decision.use = analyzeGradient(op->getResult(0));
  decision.overrides = readPolicyOverrides(op, decision.use.parameter);
  auto dense = [&](const Twine &reason) {
    decision.reason = reason.str();
    return decision;
  };
  StringRef policyName = stringifyPolicy(policy);
  if (std::optional<Policy> marked = decision.overrides.policy) {
    if (*marked != policy)
      return dense("marked gradcomm.policy = \"" + stringifyPolicy(*marked) +
                   "\"" + (*marked == Policy::Dense ? "" : " (not this pass)"));
    decision.forced = true;
  }
  // A forced policy that cannot be honoured is the user's error to hear.
  auto refuse = [&](const Twine &why) -> FailureOr<RewriteDecision> {
    if (!decision.forced)
      return dense(why);
    return op->emitError() << passName << ": marked gradcomm.policy = \""
                           << policyName << "\" (on the "
                           << decision.overrides.policySource
                           << ") but cannot be rewritten: " << why;
  };

  if (std::optional<std::string> why = whyNotRewritable(op))
    return refuse(*why);
  auto type = cast<RankedTensorType>(reducedInput(op).getType());
  if (!decision.use.isGradient &&
      (!decision.forced || policy == Policy::Gossip || policy == Policy::Easgd))
    return refuse("not a gradient: the result does not reach a returned "
                  "parameter update through elementwise ops");
  Type element = type.getElementType();
  const bool half =
      filter.halfGradients && (element.isBF16() || element.isF16());
  if (!element.isF32() && !half) {
    if (!decision.forced)
      op->emitWarning() << passName << ": " << element
                        << " gradient left dense: " << policyName
                        << (filter.halfGradients ? " supports f32, bf16 and f16"
                                                 : " supports f32 only");
    return refuse(filter.halfGradients ? "element type is not f32, bf16 or f16"
                                       : "element type is not f32");
  }
  if (decision.forced) {
    decision.rewrite = true;
    return decision;
  }
  if (decision.use.parameter) {
    std::string name = parameterName(decision.use.parameter);
    if (!filter.include.empty() && !llvm::is_contained(filter.include, name))
      return dense("parameter '" + name + "' is not in 'include'");
    if (llvm::is_contained(filter.exclude, name))
      return dense("parameter '" + name + "' is in 'exclude'");
  }
  if (type.getNumElements() < filter.minElements)
    return dense(Twine(type.getNumElements()) + " elements < min-elements (" +
                 Twine(filter.minElements) + ")");
  decision.rewrite = true;
  return decision;
}

std::string mlir::gradcomm::collectiveName(Operation *op,
                                           BlockArgument parameter,
                                           int64_t index) {
  if (parameter)
    return sanitizeSymbolName(parameterName(parameter) + "_grad");
  auto func = op->getParentOfType<FunctionOpInterface>();
  StringRef scope = func ? func.getName() : StringRef("module");
  return sanitizeSymbolName((scope + "_all_reduce_" + Twine(index)).str());
}

int64_t mlir::gradcomm::reducedGroupSize(Operation *op) {
  FlatSymbolRefAttr gridRef;
  ArrayRef<int16_t> axes;
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
    gridRef = reduce.getGridAttr();
    axes = reduce.getGridAxes();
  } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    gridRef = scatter.getGridAttr();
    axes = scatter.getGridAxes();
  }
  auto grid =
      gridRef ? SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridRef)
              : shard::GridOp();
  if (!grid || axes.empty())
    return ShapedType::kDynamic;
  return grid.getShape()[axes[0]];
}
