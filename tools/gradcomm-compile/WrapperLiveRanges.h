//===- WrapperLiveRanges.h - Short live ranges in entry-point wrappers ----===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_TOOLS_GRADCOMM_COMPILE_WRAPPERLIVERANGES_H
#define GRADCOMM_TOOLS_GRADCOMM_COMPILE_WRAPPERLIVERANGES_H

namespace llvm {
class Function;
} // namespace llvm

namespace mlir::gradcomm {

/// Rewrites an entry point's C wrapper (`_mlir_ciface_*`, compiled without
/// optimization, with the step inlined into it) so that no value lives
/// across the whole step: each argument descriptor is loaded (and its
/// fields extracted) just before its first use instead of at the top, and
/// each field of the result is stored into a stack copy of the result as
/// soon as it is computed, the copy going to the caller's result with one
/// memcpy where the last field was stored. The wrapper's reads of its argument
/// descriptors and its write of the result keep their order relative to each
/// other (all reads still happen before the one write), so a caller may pass
/// the same descriptor as an argument and as the result. Linear in the
/// wrapper's size; without it the register allocator's time grows quadratically
/// with the number of parameters.
void shortenWrapperLiveRanges(llvm::Function &wrapper);

} // namespace mlir::gradcomm

#endif // GRADCOMM_TOOLS_GRADCOMM_COMPILE_WRAPPERLIVERANGES_H
