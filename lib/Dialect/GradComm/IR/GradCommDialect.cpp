//===- GradCommDialect.cpp - GradComm dialect registration ----------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::gradcomm;

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.cpp.inc"

void GradCommDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gradcomm/Dialect/GradComm/IR/GradCommOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// gradcomm.* discardable attributes
//===----------------------------------------------------------------------===//

/// Checks one `gradcomm.*` attribute found at `place` (on `op`, or on one of
/// its region arguments).
static LogicalResult verifyGradCommAttribute(Operation *op,
                                             NamedAttribute attribute,
                                             AttrPlace place,
                                             StringRef placeText) {
  StringRef name = attribute.getName().getValue();
  const AttrSpec *spec = llvm::find_if(
      getAttrSpecs(), [&](const AttrSpec &spec) { return spec.name == name; });
  if (spec == getAttrSpecs().end()) {
    std::string known;
    for (const AttrSpec &candidate : getAttrSpecs())
      known += (known.empty() ? "" : ", ") + candidate.name.str();
    return op->emitError() << "unknown attribute '" << name << "' " << placeText
                           << " (known gradcomm attributes: " << known << ")";
  }
  if (!(spec->places & place)) {
    std::string where;
    if (spec->places & OnAllReduce)
      where += "shard.all_reduce and shard.reduce_scatter ops";
    if (spec->places & OnGradCommOp)
      where += std::string(where.empty() ? "" : " and ") + "gradcomm ops";
    if (spec->places & OnArgument)
      where += std::string(where.empty() ? "" : " and ") + "function arguments";
    return op->emitError() << "'" << name << "' " << placeText
                           << " has no meaning there: it applies to " << where;
  }
  if (std::optional<std::string> why =
          checkAttrValue(*spec, attribute.getValue()))
    return op->emitError() << *why << " (" << placeText << ")";
  return success();
}

LogicalResult
GradCommDialect::verifyOperationAttribute(Operation *op,
                                          NamedAttribute attribute) {
  // A gradient reduction: an all-reduce, or a reduce-scatter (sharded).
  AttrPlace place = isa<shard::AllReduceOp, shard::ReduceScatterOp>(op)
                        ? OnAllReduce
                    : op->getDialect() == this                 ? OnGradCommOp
                    : isa<FunctionOpInterface>(op)             ? OnFunction
                    : op->getName().getStringRef() == "scf.if" ? OnStepGuard
                                                               : AttrPlace(0);
  std::string placeText = ("on '" + op->getName().getStringRef() + "'").str();
  return verifyGradCommAttribute(op, attribute, place, placeText);
}

LogicalResult
GradCommDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                          unsigned argIndex,
                                          NamedAttribute attribute) {
  std::string placeText = ("on argument " + Twine(argIndex) + " of '" +
                           op->getName().getStringRef() + "'")
                              .str();
  return verifyGradCommAttribute(op, attribute, OnArgument, placeText);
}
