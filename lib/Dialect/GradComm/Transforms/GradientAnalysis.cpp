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

#include <cstdio>

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

/// Searches backwards from `value` through elementwise ops (a few levels,
/// enough for decay terms) for a function argument of type `type`.
static BlockArgument findParameter(Value value, Type type, int depth) {
  if (BlockArgument arg = asFunctionArgument(value))
    return arg.getType() == type ? arg : nullptr;
  Operation *def = value.getDefiningOp();
  if (!def || depth == 0 || !isElementwiseOp(def))
    return nullptr;
  for (OpOperand &operand : def->getOpOperands())
    if (useCarriesData(operand))
      if (BlockArgument arg = findParameter(operand.get(), type, depth - 1))
        return arg;
  return nullptr;
}

GradientUse mlir::gradcomm::analyzeGradient(Value reduced) {
  constexpr int kParameterSearchDepth = 8;
  Type type = reduced.getType();
  // (value on the elementwise path, parameter met so far on that path)
  SmallVector<std::pair<Value, BlockArgument>> worklist = {{reduced, nullptr}};
  llvm::DenseSet<Value> visited;
  while (!worklist.empty()) {
    auto [value, parameter] = worklist.pop_back_val();
    if (!visited.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user->hasTrait<OpTrait::ReturnLike>() &&
          isa_and_nonnull<FunctionOpInterface>(user->getParentOp())) {
        if (parameter)
          return {true, parameter, &use};
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
        if (result.getType() == type)
          worklist.push_back({result, found ? found : parameter});
    }
  }
  return {};
}

Attribute mlir::gradcomm::lookupOverride(Operation *op, BlockArgument parameter,
                                         StringRef name) {
  if (Attribute attr = op->getAttr(name))
    return attr;
  if (!parameter)
    return nullptr;
  auto func = cast<FunctionOpInterface>(parameter.getOwner()->getParentOp());
  return func.getArgAttr(parameter.getArgNumber(), name);
}

std::string mlir::gradcomm::parameterName(BlockArgument parameter) {
  auto func = cast<FunctionOpInterface>(parameter.getOwner()->getParentOp());
  if (auto name = func.getArgAttrOfType<StringAttr>(parameter.getArgNumber(),
                                                    policy_attr::kName))
    return name.str();
  return (func.getName() + "_arg" + Twine(parameter.getArgNumber())).str();
}

std::string mlir::gradcomm::sanitizeSymbolName(StringRef name) {
  std::string result = name.str();
  for (char &c : result)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  if (result.empty() || llvm::isDigit(result.front()))
    result.insert(result.begin(), '_');
  return result;
}

std::optional<std::string>
mlir::gradcomm::whyNotRewritable(shard::AllReduceOp op) {
  if (op.getReduction() != shard::ReductionKind::Sum &&
      op.getReduction() != shard::ReductionKind::Average)
    return ("reduction '" + shard::stringifyReductionKind(op.getReduction()) +
            "' is not a gradient reduction (sum or average)")
        .str();
  auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!type || op.getResult().getType() != type)
    return std::string(
        "not a tensor all-reduce with equal input and result types");
  if (!type.hasStaticShape())
    return std::string("dynamic shape");
  if (!isa<FloatType>(type.getElementType()))
    return std::string("element type is not floating point");
  if (op.getGridAxes().size() != 1)
    return ("reduces over " + Twine(op.getGridAxes().size()) +
            " grid axes; exactly one is needed")
        .str();
  return std::nullopt;
}

FailureOr<std::optional<double>>
mlir::gradcomm::readNumberOverride(Operation *op, BlockArgument parameter,
                                   StringRef name, StringRef pass) {
  Attribute attr = lookupOverride(op, parameter, name);
  if (!attr)
    return std::optional<double>();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return std::optional<double>(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return std::optional<double>(static_cast<double>(i.getInt()));
  return op->emitError() << pass << ": '" << name << "' must be a number, got "
                         << attr;
}

FailureOr<std::optional<std::string>>
mlir::gradcomm::readStringOverride(Operation *op, BlockArgument parameter,
                                   StringRef name, StringRef pass) {
  Attribute attr = lookupOverride(op, parameter, name);
  if (!attr)
    return std::optional<std::string>();
  if (auto s = dyn_cast<StringAttr>(attr))
    return std::optional<std::string>(s.str());
  return op->emitError() << pass << ": '" << name << "' must be a string, got "
                         << attr;
}

std::string mlir::gradcomm::formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

void mlir::gradcomm::insertDeclaration(SymbolTable &symbolTable,
                                       Operation *op) {
  Block &body = symbolTable.getOp()->getRegion(0).front();
  auto firstOther = llvm::find_if(body, [](Operation &declaration) {
    return !isa<shard::GridOp, StateOp>(declaration);
  });
  symbolTable.insert(op, firstOther);
}
