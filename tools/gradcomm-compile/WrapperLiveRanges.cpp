//===- WrapperLiveRanges.cpp - Short live ranges in entry-point wrappers --===//
//
// Part of the GradComm project.
//
// An entry point's C wrapper loads every argument descriptor at its top
// and stores every field of its result at its bottom; with N parameters
// that is O(N) values live across the O(N) calls of the step, and LLVM's
// greedy register allocator (83 % of code generation at N = 3000) grows
// quadratically. See WrapperLiveRanges.h. Runs on the optimized module,
// just before code generation (the wrapper itself is `optnone`).
//
//===----------------------------------------------------------------------===//

#include "WrapperLiveRanges.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Local.h"

#include <utility>

using namespace llvm;

namespace {

/// A store of one field of the result: the store and its byte offset.
using FieldStore = std::pair<StoreInst *, uint64_t>;

/// Every use of the result pointer, if each is a simple store to it at a
/// constant offset (through in-bounds GEPs); empty otherwise.
SmallVector<FieldStore> resultStores(Argument *result,
                                     const DataLayout &layout) {
  SmallVector<FieldStore> stores;
  SmallVector<std::pair<Value *, uint64_t>> worklist = {{result, 0}};
  while (!worklist.empty()) {
    auto [pointer, offset] = worklist.pop_back_val();
    for (User *user : pointer->users()) {
      if (auto *gep = dyn_cast<GetElementPtrInst>(user)) {
        APInt delta(layout.getIndexTypeSizeInBits(gep->getType()), 0);
        if (gep->getPointerOperand() != pointer || !gep->isInBounds() ||
            !gep->accumulateConstantOffset(layout, delta) || delta.isNegative())
          return {};
        worklist.push_back({gep, offset + delta.getZExtValue()});
      } else if (auto *store = dyn_cast<StoreInst>(user)) {
        if (store->getPointerOperand() != pointer || !store->isSimple())
          return {};
        stores.push_back({store, offset});
      } else {
        return {};
      }
    }
  }
  return stores;
}

/// Stores each field of the result into a stack copy as soon as it is
/// computed, and copies the copy to the caller's result where the last
/// field was stored.
void storeResultFieldsEarly(Function &wrapper) {
  if (wrapper.arg_empty() || !wrapper.getArg(0)->getType()->isPointerTy())
    return;
  Argument *result = wrapper.getArg(0);
  const DataLayout &layout = wrapper.getParent()->getDataLayout();
  SmallVector<FieldStore> stores = resultStores(result, layout);
  if (stores.empty())
    return;
  // One block, no two stores to the same bytes (their order would matter).
  BasicBlock *block = stores.front().first->getParent();
  auto end = [&](const FieldStore &field) {
    return field.second +
           layout.getTypeStoreSize(field.first->getValueOperand()->getType());
  };
  SmallVector<FieldStore> byOffset(stores);
  llvm::sort(byOffset, [](const FieldStore &a, const FieldStore &b) {
    return a.second < b.second;
  });
  for (size_t i = 0; i < byOffset.size(); ++i)
    if (byOffset[i].first->getParent() != block ||
        (i + 1 < byOffset.size() && end(byOffset[i]) > byOffset[i + 1].second))
      return;
  const uint64_t size = end(byOffset.back());
  // The last store of the block: where the caller's result is written.
  StoreInst *last = nullptr;
  DenseSet<StoreInst *> isResultStore;
  for (auto [store, offset] : stores)
    isResultStore.insert(store);
  for (Instruction &instruction : *block)
    if (auto *store = dyn_cast<StoreInst>(&instruction);
        store && isResultStore.contains(store))
      last = store;

  const Align copyAlign(16);
  BasicBlock &entry = wrapper.getEntryBlock();
  IRBuilder<> builder(&entry, entry.getFirstInsertionPt());
  AllocaInst *copy = builder.CreateAlloca(
      ArrayType::get(builder.getInt8Ty(), size), nullptr, "result.copy");
  copy->setAlignment(copyAlign);
  for (auto [store, offset] : stores) {
    Value *value = store->getValueOperand();
    auto *definition = dyn_cast<Instruction>(value);
    if (definition && !isa<PHINode>(definition) && !definition->isTerminator())
      builder.SetInsertPoint(definition->getParent(),
                             std::next(definition->getIterator()));
    else
      builder.SetInsertPoint(last);
    Value *field =
        builder.CreateConstInBoundsGEP1_64(builder.getInt8Ty(), copy, offset);
    builder.CreateAlignedStore(value, field,
                               commonAlignment(copyAlign, offset));
  }
  builder.SetInsertPoint(last);
  builder.CreateMemCpy(result, Align(1), copy, copyAlign, size);
  for (auto [store, offset] : stores) {
    Value *pointer = store->getPointerOperand();
    store->eraseFromParent();
    RecursivelyDeleteTriviallyDeadInstructions(pointer);
  }
}

/// Loads from argument descriptors (through constant offsets) and the
/// address arithmetic and extracts around them: pure reads of the caller's
/// descriptors, used only in the entry block.
bool isSinkable(Instruction &instruction, BasicBlock &entry) {
  bool pure =
      isa<ExtractValueInst, InsertValueInst, GetElementPtrInst>(instruction);
  if (auto *load = dyn_cast<LoadInst>(&instruction))
    pure = load->isSimple() &&
           isa<Argument>(
               load->getPointerOperand()->stripInBoundsConstantOffsets());
  if (!pure)
    return false;
  return llvm::all_of(instruction.users(), [&](User *user) {
    auto *userInstruction = dyn_cast<Instruction>(user);
    return userInstruction && userInstruction->getParent() == &entry;
  });
}

/// Whether `instruction` may write through the result pointer (the
/// wrapper's first argument).
bool writesResult(Instruction &instruction, Argument *result) {
  auto isResult = [&](Value *pointer) {
    return pointer->stripInBoundsConstantOffsets() == result;
  };
  if (auto *store = dyn_cast<StoreInst>(&instruction))
    return isResult(store->getPointerOperand());
  if (auto *call = dyn_cast<CallBase>(&instruction))
    return llvm::any_of(call->args(), [&](Use &arg) { return isResult(arg); });
  return false;
}

/// Moves each sinkable instruction of the entry block (with the sinkable
/// instructions it needs, in order) just before the first other
/// instruction that needs it, but never past the first write of the
/// result: a caller may pass one descriptor as an argument and as the
/// result, so every argument read stays before that write.
void sinkDescriptorLoads(Function &wrapper) {
  BasicBlock &entry = wrapper.getEntryBlock();
  Argument *result = wrapper.arg_empty() ? nullptr : wrapper.getArg(0);
  Instruction *barrier = nullptr;
  DenseSet<Instruction *> sinkable, placed;
  SmallVector<Instruction *> anchors;
  for (Instruction &instruction : entry) {
    if (isSinkable(instruction, entry))
      sinkable.insert(&instruction);
    else
      anchors.push_back(&instruction);
  }
  // Iterative post-order: operands first, each placed once.
  SmallVector<std::pair<Instruction *, bool>> stack;
  for (Instruction *user : anchors) {
    if (!barrier && result && writesResult(*user, result))
      barrier = user;
    Instruction *anchor = barrier ? barrier : user;
    for (Value *operand : user->operands())
      if (auto *needed = dyn_cast<Instruction>(operand);
          needed && sinkable.contains(needed))
        stack.push_back({needed, false});
    while (!stack.empty()) {
      auto [instruction, operandsDone] = stack.pop_back_val();
      if (placed.contains(instruction))
        continue;
      if (operandsDone) {
        placed.insert(instruction);
        instruction->moveBefore(anchor->getIterator());
        continue;
      }
      stack.push_back({instruction, true});
      for (Value *operand : instruction->operands())
        if (auto *needed = dyn_cast<Instruction>(operand);
            needed && sinkable.contains(needed) && !placed.contains(needed))
          stack.push_back({needed, false});
    }
  }
  // What no anchor needs, even through other sinkable instructions, is
  // dead (its users are unplaced sinkable instructions too) and may now
  // sit above the operands that moved: erase it, users first.
  SmallVector<Instruction *> dead;
  for (Instruction &instruction : entry)
    if (sinkable.contains(&instruction) && !placed.contains(&instruction))
      dead.push_back(&instruction);
  for (Instruction *instruction : llvm::reverse(dead)) {
    instruction->dropAllReferences();
    instruction->eraseFromParent();
  }
}

} // namespace

void mlir::gradcomm::shortenWrapperLiveRanges(Function &wrapper) {
  if (wrapper.isDeclaration())
    return;
  storeResultFieldsEarly(wrapper);
  sinkDescriptorLoads(wrapper);
}
