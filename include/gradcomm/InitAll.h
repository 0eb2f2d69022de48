//===- InitAll.h - Register GradComm and the upstream it needs --*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_INITALL_H
#define GRADCOMM_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::gradcomm {

/// Registers the GradComm dialect, every upstream dialect and extension
/// (so exported graphs of any upstream dialect parse) into `registry`.
void registerAllGradCommDialects(DialectRegistry &registry);

/// Registers GradComm's passes and pipelines and every upstream pass
/// (sharding-propagation, shard-partition, bufferization, lowering).
void registerAllGradCommPasses();

} // namespace mlir::gradcomm

#endif // GRADCOMM_INITALL_H
