//===- Simulate.h - gradcomm-plan --simulate --------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TOOLS_GRADCOMM_PLAN_SIMULATE_H
#define GRADCOMM_TOOLS_GRADCOMM_PLAN_SIMULATE_H

#include "gradcomm/Analysis/CostModel.h"

#include "llvm/ADT/ArrayRef.h"

namespace mlir::gradcomm {

/// gradcomm-plan --simulate: replays the step's communication for every
/// rank count of --sweep-ranks and every strategy of --strategies, prints
/// the tables, writes --csv. Returns the exit status.
int runSimulation(const ClusterModel &cluster, ArrayRef<int64_t> tensors);

} // namespace mlir::gradcomm

#endif // GRADCOMM_TOOLS_GRADCOMM_PLAN_SIMULATE_H
