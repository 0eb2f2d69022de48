//===- Passes.h - GradComm conversion passes --------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_CONVERSION_PASSES_H
#define GRADCOMM_CONVERSION_PASSES_H

#include "gradcomm/Conversion/GradCommToRuntime/GradCommToRuntime.h"
#include "gradcomm/Conversion/LinalgToBlas/LinalgToBlas.h"

namespace mlir::gradcomm {

#define GEN_PASS_REGISTRATION
#include "gradcomm/Conversion/Passes.h.inc"

} // namespace mlir::gradcomm

#endif // GRADCOMM_CONVERSION_PASSES_H
