//===- OutlineKernels.cpp - One function per structured op ----------------===//
//
// Part of the GradComm project.
//
// Compile time of a step must stay linear in its number of parameters
// (docs/performance.md, "Compile time"): without this pass every loop nest
// of every parameter lands in one LLVM function, and LLVM's per-function
// work (induction-variable simplification, instruction selection) grows
// faster than linearly with function size.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Dialect/GradComm/IR/GradCommAttributes.h"
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h"
#include "gradcomm/Transforms/Buffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>

namespace mlir::gradcomm {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "gradcomm/Dialect/GradComm/Transforms/Passes.h.inc"
} // namespace mlir::gradcomm

using namespace mlir;
using mlir::gradcomm::isFreshAllocation;
using mlir::gradcomm::rootBuffer;

namespace {

/// Can `type` cross a bare-pointer call: a statically shaped memref with
/// the identity layout (or a scalar)?
bool passesAsBarePointer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return !isa<BaseMemRefType>(type);
  return memref.hasStaticShape() && memref.getLayout().isIdentity();
}

/// Ops that are cheaper to recreate inside an outlined function than to
/// pass in: constants and casts (a cast's source is passed instead, keeping
/// bare pointers possible). Symbol addresses (the op and state names of
/// runtime calls) are passed in, so that the calls of every tensor of one
/// shape become one function (mergeIdenticalKernels).
bool isRematerializable(Operation *op) {
  if (!op || isa<LLVM::AddressOfOp>(op))
    return false;
  return op->hasTrait<OpTrait::ConstantLike>() || isa<memref::CastOp>(op);
}

/// Are the roots `a` and `b` certainly different memory? A fresh
/// allocation differs from another fresh allocation and from the
/// function's own arguments (which existed before it); anything else
/// (two arguments, a value chosen by control flow, a call's result) might
/// be the same memory.
bool certainlyDisjoint(Value a, Value b) {
  if (a == b)
    return false;
  auto isEntryArgument = [](Value value) {
    auto argument = dyn_cast<BlockArgument>(value);
    return argument && argument.getOwner()->isEntryBlock() &&
           isa<FunctionOpInterface>(argument.getOwner()->getParentOp());
  };
  bool aFresh = isFreshAllocation(a), bFresh = isFreshAllocation(b);
  return (aFresh && (bFresh || isEntryArgument(b))) ||
         (bFresh && isEntryArgument(a));
}

/// The arguments of a loop-nest kernel that its op writes (the structured
/// op's outputs, seen through views), or nothing when the body holds
/// anything else that could write memory.
std::optional<llvm::BitVector> writtenArguments(func::FuncOp kernel) {
  llvm::BitVector written(kernel.getNumArguments());
  for (Operation &op : kernel.getBody().front()) {
    if (isa<func::ReturnOp, ViewLikeOpInterface>(op) ||
        op.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp)
      return std::nullopt;
    for (Value init : linalgOp.getDpsInits()) {
      auto argument = dyn_cast<BlockArgument>(rootBuffer(init));
      if (!argument || argument.getOwner() != &kernel.getBody().front())
        return std::nullopt;
      written.set(argument.getArgNumber());
    }
  }
  return written;
}

/// A call of a runtime entry point (a declaration with a C interface),
/// with the check of its status when that is its only use.
SmallVector<Operation *> runtimeCallGroup(func::CallOp call,
                                          SymbolTable &symbols) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || !callee.isExternal() ||
      !callee->hasAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName()))
    return {};
  SmallVector<Operation *> group = {call};
  for (Value result : call.getResults()) {
    if (!result.hasOneUse())
      return {};
    auto check = dyn_cast<func::CallOp>(*result.getUsers().begin());
    if (!check || check->getBlock() != call->getBlock() ||
        check.getNumResults() != 0)
      return {};
    group.push_back(check);
  }
  return group;
}

class OutlineKernelsPass
    : public gradcomm::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      if (func.isExternal() || func->hasAttr(gradcomm::attr::kKernel))
        continue;
      // Loop nests and runtime calls (with their status checks): each
      // becomes one function.
      SmallVector<SmallVector<Operation *>> groups;
      int64_t structured = 0;
      // The guards of gradcomm-guard-failed-steps are looked into: they
      // hold most of the loop nests of a step compiled with on-error=return.
      std::function<void(Block &)> collect = [&](Block &block) {
        for (Operation &op : block) {
          if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
            if (linalgOp.hasPureBufferSemantics()) {
              groups.push_back({&op});
              ++structured;
            }
          } else if (auto call = dyn_cast<func::CallOp>(op)) {
            SmallVector<Operation *> group = runtimeCallGroup(call, symbols);
            if (!group.empty())
              groups.push_back(std::move(group));
          } else if (auto guard = dyn_cast<scf::IfOp>(op);
                     guard && guard->hasAttr(gradcomm::attr::kStepGuard)) {
            collect(guard.getThenRegion().front());
          }
        }
      };
      for (Block &block : func.getBody())
        collect(block);
      if (structured < minOps)
        continue;
      for (auto [index, group] : llvm::enumerate(groups))
        outline(group, func, index, symbols);
    }
    mergeIdenticalKernels(module);
    markNoAliasArguments(module);
  }

private:
  /// Kernels with the same body and signature (layers of one shape, the
  /// same optimizer update on every parameter of a size) become one: every
  /// call goes to the first, the others are erased. LLVM then optimizes and
  /// selects instructions for each distinct loop nest once.
  void mergeIdenticalKernels(ModuleOp module) {
    llvm::StringMap<StringAttr> representative;
    llvm::DenseMap<StringAttr, StringAttr> replacement;
    SmallVector<func::FuncOp> duplicates;
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(gradcomm::attr::kKernel))
        continue;
      std::string key = fingerprint(kernel);
      auto [it, inserted] =
          representative.try_emplace(key, kernel.getSymNameAttr());
      if (inserted)
        continue;
      replacement[kernel.getSymNameAttr()] = it->second;
      duplicates.push_back(kernel);
    }
    if (duplicates.empty())
      return;
    module.walk([&](func::CallOp call) {
      auto it = replacement.find(call.getCalleeAttr().getAttr());
      if (it != replacement.end())
        call.setCallee(it->second.getValue());
    });
    for (func::FuncOp kernel : duplicates)
      kernel.erase();
  }

  /// `llvm.noalias` on the buffer arguments of a bare-pointer kernel where
  /// every call proves it: a written buffer must be disjoint from every
  /// other buffer argument, a read-only one from every written one
  /// (read-only buffers may overlap each other under LLVM's `noalias`).
  /// Without it LLVM vectorizes a kernel's loops only behind run-time
  /// overlap checks, or not at all ("runtime pointer checks needed").
  void markNoAliasArguments(ModuleOp module) {
    llvm::DenseMap<StringAttr, SmallVector<func::CallOp>> calls;
    module.walk([&](func::CallOp call) {
      calls[call.getCalleeAttr().getAttr()].push_back(call);
    });
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!kernel->hasAttr(gradcomm::attr::kKernel) ||
          !kernel->hasAttr("llvm.bareptr"))
        continue;
      std::optional<llvm::BitVector> written = writtenArguments(kernel);
      auto sites = calls.find(kernel.getSymNameAttr());
      if (!written || written->none() || sites == calls.end())
        continue;
      unsigned count = kernel.getNumArguments();
      llvm::BitVector noAlias(count);
      for (unsigned i = 0; i < count; ++i)
        noAlias[i] = isa<MemRefType>(kernel.getArgument(i).getType());
      for (func::CallOp call : sites->second) {
        for (unsigned i = 0; i < count; ++i) {
          if (!noAlias[i])
            continue;
          Value root = rootBuffer(call.getOperand(i));
          for (unsigned j = 0; j < count && noAlias[i]; ++j) {
            if (j == i || !isa<MemRefType>(call.getOperand(j).getType()) ||
                (!(*written)[i] && !(*written)[j]))
              continue;
            if (!certainlyDisjoint(root, rootBuffer(call.getOperand(j))))
              noAlias[i] = false;
          }
        }
      }
      for (unsigned i : noAlias.set_bits())
        kernel.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                          UnitAttr::get(module.getContext()));
    }
  }

  /// The kernel as text, under a fixed name: equal text, equal function.
  static std::string fingerprint(func::FuncOp kernel) {
    StringAttr name = kernel.getSymNameAttr();
    kernel.setSymName("kernel");
    std::string text;
    llvm::raw_string_ostream os(text);
    kernel->print(os, OpPrintingFlags()
                          .printGenericOpForm()
                          .useLocalScope()
                          .assumeVerified());
    kernel.setSymNameAttr(name);
    return text;
  }

  /// Moves `group` (ops of one block, in order, whose results are used only
  /// inside the group) into a new private function called in its place.
  void outline(ArrayRef<Operation *> group, func::FuncOp parent, size_t index,
               SymbolTable &symbols) {
    llvm::SmallPtrSet<Operation *, 4> members(group.begin(), group.end());
    for (Operation *op : group)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!members.contains(user))
            return; // a value escapes: leave the group where it is

    // What the group reads from outside: operands and values its regions
    // use from above. Rematerializable producers are cloned in (their
    // operands captured in turn); everything else becomes an argument.
    llvm::SetVector<Value> captured;
    llvm::SetVector<Operation *> cloned;
    std::function<void(Value)> capture = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (def && members.contains(def))
        return;
      if (isRematerializable(def)) {
        for (Value operand : def->getOperands())
          capture(operand);
        cloned.insert(def);
        return;
      }
      captured.insert(value);
    };
    for (Operation *op : group) {
      for (Value operand : op->getOperands())
        capture(operand);
      llvm::SetVector<Value> fromAbove;
      getUsedValuesDefinedAbove(op->getRegions(), fromAbove);
      for (Value value : fromAbove)
        capture(value);
    }

    // A 16-bit float scalar crosses the call as i16: LLVM's x86 backend
    // carries a bf16 argument in a float register and rounds it there with
    // a call to libgcc's __truncsfbf2, which GCC 12 (Debian 12) lacks.
    Type i16 = IntegerType::get(parent.getContext(), 16);
    auto passesAsBits = [](Value value) {
      return value.getType().isBF16() || value.getType().isF16();
    };
    SmallVector<Type> types;
    for (Value value : captured)
      types.push_back(passesAsBits(value) ? i16 : value.getType());
    Operation *first = group.front();
    OpBuilder builder(parent);
    bool isLoopNest = isa<linalg::LinalgOp>(first);
    std::string name = (parent.getName() +
                        (isLoopNest ? "__kernel_" : "__comm_") + Twine(index))
                           .str();
    auto kernel = func::FuncOp::create(builder, first->getLoc(), name,
                                       builder.getFunctionType(types, {}));
    kernel.setPrivate();
    kernel->setAttr(gradcomm::attr::kKernel, builder.getUnitAttr());
    // Kept out of line: inlining them back would rebuild the one big
    // function this pass exists to avoid.
    kernel.setNoInline(true);
    if (llvm::all_of(types, passesAsBarePointer))
      kernel->setAttr("llvm.bareptr", builder.getUnitAttr());
    symbols.insert(kernel);

    Block *body = kernel.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(captured, body->getArguments()))
      mapping.map(value, passesAsBits(value) ? arith::BitcastOp::create(
                                                   inside, value.getLoc(),
                                                   value.getType(), argument)
                                                   .getResult()
                                             : Value(argument));
    // Producers in program order, so each clone finds its operands mapped.
    SmallVector<Operation *> producers(cloned.begin(), cloned.end());
    llvm::sort(producers, [](Operation *a, Operation *b) {
      return a->getBlock() == b->getBlock() ? a->isBeforeInBlock(b) : false;
    });
    for (Operation *producer : producers)
      inside.clone(*producer, mapping);
    for (Operation *op : group)
      inside.clone(*op, mapping);
    func::ReturnOp::create(inside, first->getLoc());

    OpBuilder atOp(first);
    SmallVector<Value> operands;
    for (Value value : captured)
      operands.push_back(
          passesAsBits(value)
              ? arith::BitcastOp::create(atOp, value.getLoc(), i16, value)
                    .getResult()
              : value);
    func::CallOp::create(atOp, first->getLoc(), kernel, operands);
    for (Operation *op : llvm::reverse(group))
      op->erase();
    for (Operation *producer : llvm::reverse(producers))
      if (producer->use_empty())
        producer->erase();
  }
};

} // namespace
