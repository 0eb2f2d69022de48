# Precompiled MLIR headers for the compiler's libraries.
#
# Every source under lib/ parses the same MLIR and dialect headers (the
# generated op classes above all) before its own code: 20-25 s of the
# 30-50 s a pass takes to compile on one core of the CI machine. One
# precompiled header, built with the dialect library and reused by the
# others (they share its flags), makes that parse once per build.
#
# Only headers that no source configures with a macro first belong here
# (not Passes.h / Passes.h.inc, which sources include after
# `#define GEN_PASS_DEF_...`); in angle brackets, so that CMake takes them
# as include names, not paths. GRADCOMM_PRECOMPILED_HEADERS=OFF builds
# without it (a check that every source includes what it uses).

option(GRADCOMM_PRECOMPILED_HEADERS
  "Precompile the MLIR headers the compiler's libraries share" ON)

set(GRADCOMM_PRECOMPILED_HEADER_LIST
  <gradcomm/Dialect/GradComm/IR/GradCommAttributes.h>
  <gradcomm/Dialect/GradComm/IR/GradCommOps.h>
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Shard/IR/ShardOps.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/IR/Builders.h>
  <mlir/IR/PatternMatch.h>
  <mlir/IR/SymbolTable.h>
  <mlir/Interfaces/FunctionInterfaces.h>
  <mlir/Pass/Pass.h>
  <mlir/Transforms/DialectConversion.h>
  <llvm/Support/FormatVariadic.h>)

# gradcomm_precompile_mlir_headers(<producer> <consumer>...): <producer>'s
# sources build the precompiled header, the consumers reuse it. Targets are
# the libraries' object libraries (obj.<name>) where add_mlir_library made
# them.
function(gradcomm_precompile_mlir_headers producer)
  if(NOT GRADCOMM_PRECOMPILED_HEADERS)
    return()
  endif()
  set(targets)
  foreach(name ${producer} ${ARGN})
    if(TARGET obj.${name})
      list(APPEND targets obj.${name})
    else()
      list(APPEND targets ${name})
    endif()
  endforeach()
  list(POP_FRONT targets producer_target)
  target_precompile_headers(${producer_target} PRIVATE
    ${GRADCOMM_PRECOMPILED_HEADER_LIST})
  foreach(target ${targets})
    target_precompile_headers(${target} REUSE_FROM ${producer_target})
  endforeach()
endfunction()
