//===- GradCommAttributes.cpp - gradcomm.* discardable attributes ---------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::gradcomm;

ArrayRef<AttrSpec> mlir::gradcomm::getAttrSpecs() {
  static const AttrSpec specs[] = {
      {attr::kPolicy, AttrValueKind::PolicyName, OnAllReduce | OnArgument,
       "force a policy: \"dense\", \"scalecom\", \"gossip\" or \"easgd\""},
      {attr::kName, AttrValueKind::NonEmptyString, OnArgument,
       "the parameter's name (state names, include/exclude, counters)"},
      {attr::kRatio, AttrValueKind::PositiveNumber, OnAllReduce | OnArgument,
       "ScaleCom compression ratio N / k (> 0)"},
      {attr::kK, AttrValueKind::PositiveInteger, OnAllReduce | OnArgument,
       "ScaleCom fixed k (>= 1)"},
      {attr::kBeta, AttrValueKind::UnitInterval, OnAllReduce | OnArgument,
       "ScaleCom low-pass coefficient in (0, 1]"},
      {attr::kSelection, AttrValueKind::SelectionName, OnAllReduce | OnArgument,
       "ScaleCom selection: \"exact\" or \"chunk\""},
      {attr::kChunkSize, AttrValueKind::PositiveInteger,
       OnAllReduce | OnArgument, "ScaleCom chunk length (>= 1)"},
      {attr::kSchedule, AttrValueKind::ScheduleName, OnAllReduce | OnArgument,
       "gossip schedule: \"matching\", \"ring\" or \"hypercube\""},
      {attr::kMixing, AttrValueKind::OpenUnitInterval, OnAllReduce | OnArgument,
       "gossip mixing weight in (0, 1)"},
      {attr::kPeriod, AttrValueKind::PositiveInteger, OnAllReduce | OnArgument,
       "gossip exchange period (>= 1)"},
      {attr::kRuntimeName, AttrValueKind::NonEmptyString,
       OnAllReduce | OnGradCommOp,
       "the op's name in runtime messages and counters (set by the passes)"},
      {attr::kKernel, AttrValueKind::Unit, OnFunction,
       "a function gradcomm-outline-kernels created"},
      {attr::kStepGuard, AttrValueKind::Unit, OnStepGuard,
       "an scf.if gradcomm-guard-failed-steps created: it runs only while "
       "the step has no failed runtime call"},
  };
  return specs;
}

/// The number `value` holds (integer or float), or nullopt.
static std::optional<double> asNumber(Attribute value) {
  if (auto f = dyn_cast<FloatAttr>(value))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(value))
    if (!i.getType().isInteger(1))
      return static_cast<double>(i.getInt());
  return std::nullopt;
}

static std::string describe(Attribute value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return text;
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

std::string mlir::gradcomm::formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

std::optional<std::string> mlir::gradcomm::checkAttrValue(const AttrSpec &spec,
                                                          Attribute value) {
  auto mustBe = [&](StringRef what) {
    return ("'" + spec.name + "' must be " + what + ", got " + describe(value))
        .str();
  };
  // One of an enum's names (`isName` is the enum's symbolize function).
  auto oneOf = [&](bool (*isName)(StringRef),
                   StringRef names) -> std::optional<std::string> {
    auto text = dyn_cast<StringAttr>(value);
    if (!text)
      return mustBe(names);
    if (isName(text.getValue()))
      return std::nullopt;
    return ("'" + spec.name + "' must be " + names + ", got \"" +
            text.getValue() + "\"")
        .str();
  };
  switch (spec.kind) {
  case AttrValueKind::NonEmptyString: {
    auto text = dyn_cast<StringAttr>(value);
    if (!text || text.getValue().empty())
      return mustBe("a non-empty string");
    return std::nullopt;
  }
  case AttrValueKind::PositiveNumber:
  case AttrValueKind::UnitInterval:
  case AttrValueKind::OpenUnitInterval: {
    std::optional<double> number = asNumber(value);
    StringRef range = spec.kind == AttrValueKind::PositiveNumber ? "> 0"
                      : spec.kind == AttrValueKind::UnitInterval ? "in (0, 1]"
                                                                 : "in (0, 1)";
    if (!number)
      return mustBe(("a number " + range).str());
    bool ok = spec.kind == AttrValueKind::PositiveNumber
                  ? *number > 0.0 && std::isfinite(*number)
              : spec.kind == AttrValueKind::UnitInterval
                  ? *number > 0.0 && *number <= 1.0
                  : *number > 0.0 && *number < 1.0;
    if (!ok)
      return ("'" + spec.name + "' must be " + range + ", got " +
              formatNumber(*number))
          .str();
    return std::nullopt;
  }
  case AttrValueKind::PositiveInteger: {
    auto integer = dyn_cast<IntegerAttr>(value);
    if (!integer || integer.getType().isInteger(1))
      return mustBe("an integer >= 1");
    if (integer.getInt() < 1)
      return ("'" + spec.name + "' must be >= 1, got " +
              Twine(integer.getInt()))
          .str();
    return std::nullopt;
  }
  case AttrValueKind::Unit:
    if (!isa<UnitAttr>(value))
      return mustBe("a unit attribute");
    return std::nullopt;
  case AttrValueKind::PolicyName:
    return oneOf([](StringRef t) { return symbolizePolicy(t).has_value(); },
                 "\"dense\", \"scalecom\" or \"gossip\"");
  case AttrValueKind::SelectionName:
    return oneOf([](StringRef t) { return symbolizeSelection(t).has_value(); },
                 "\"exact\" or \"chunk\"");
  case AttrValueKind::ScheduleName:
    return oneOf([](StringRef t) { return symbolizeSchedule(t).has_value(); },
                 "\"matching\", \"ring\" or \"hypercube\"");
  }
  llvm_unreachable("unknown attribute kind");
}

PolicyOverrides mlir::gradcomm::readPolicyOverrides(Operation *op,
                                                    BlockArgument parameter) {
  FunctionOpInterface func;
  if (parameter)
    func = dyn_cast_or_null<FunctionOpInterface>(
        parameter.getOwner()->getParentOp());
  // The op's attribute wins over the argument's.
  auto lookup = [&](StringRef name, std::string *source = nullptr) {
    if (Attribute value = op->getAttr(name)) {
      if (source)
        *source = "op";
      return value;
    }
    if (func)
      if (Attribute value = func.getArgAttr(parameter.getArgNumber(), name)) {
        if (source)
          *source = "argument";
        return value;
      }
    return Attribute();
  };
  auto number = [&](StringRef name) -> std::optional<double> {
    if (Attribute value = lookup(name))
      return asNumber(value);
    return std::nullopt;
  };
  auto integer = [&](StringRef name) -> std::optional<int64_t> {
    if (auto value = dyn_cast_or_null<IntegerAttr>(lookup(name)))
      return value.getInt();
    return std::nullopt;
  };
  auto text = [&](StringRef name,
                  std::string *source = nullptr) -> std::optional<StringRef> {
    if (auto value = dyn_cast_or_null<StringAttr>(lookup(name, source)))
      return value.getValue();
    return std::nullopt;
  };

  PolicyOverrides overrides;
  if (std::optional<StringRef> policy =
          text(attr::kPolicy, &overrides.policySource))
    overrides.policy = symbolizePolicy(*policy);
  overrides.ratio = number(attr::kRatio);
  overrides.k = integer(attr::kK);
  overrides.beta = number(attr::kBeta);
  if (std::optional<StringRef> selection = text(attr::kSelection))
    overrides.selection = symbolizeSelection(*selection);
  overrides.chunkSize = integer(attr::kChunkSize);
  if (std::optional<StringRef> schedule = text(attr::kSchedule))
    overrides.schedule = symbolizeSchedule(*schedule);
  overrides.mixing = number(attr::kMixing);
  overrides.period = integer(attr::kPeriod);
  return overrides;
}
