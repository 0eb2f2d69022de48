//===- GradCommDialect.h - GradComm dialect ---------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMDIALECT_H
#define GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMDIALECT_H

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Dialect.h"

#include "gradcomm/Dialect/GradComm/IR/GradCommDialect.h.inc"

#endif // GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMDIALECT_H
