//===- Internal.h - GradComm runtime internals ------------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// Shared by every runtime source file; never installed.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_INTERNAL_H
#define GRADCOMM_RUNTIME_INTERNAL_H

#include "gradcomm/runtime.h"

#include <mpi.h>

#include <exception>
#include <new>
#include <string>

namespace gradcomm {

/// The process-wide runtime state: which communicator, who owns MPI.
struct Context {
  bool initialized = false;
  /// True when the runtime called MPI_Init and so must call MPI_Finalize.
  bool ownsMpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
};

Context &context();

/// One entry-point call: knows what to put in an error message.
class Call {
public:
  Call(const char *operation, const char *opName)
      : operation(operation), opName(opName ? opName : "") {}

  /// Records "gradcomm: <operation> '<op>' on rank r of n: <cause>" as the
  /// last error and returns `status`.
  gradcomm_status fail(gradcomm_status status, const std::string &cause) const;

  /// Translates an MPI return code; `what` names the MPI call.
  gradcomm_status mpi(int mpiError, const char *what) const;

  /// Initializes the runtime on MPI_COMM_WORLD if nothing has yet.
  gradcomm_status ensureInitialized() const;

private:
  const char *operation;
  const char *opName;
};

/// Runs `body(call)` and turns any C++ exception into a status, so nothing
/// unwinds through the C ABI.
template <typename Body>
gradcomm_status guarded(const char *operation, const char *opName,
                        Body &&body) {
  Call call(operation, opName);
  try {
    return body(call);
  } catch (const std::bad_alloc &) {
    return call.fail(GRADCOMM_ERR_NO_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return call.fail(GRADCOMM_ERR_INTERNAL, e.what());
  }
}

/// Returns early from an entry point on failure.
#define GRADCOMM_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    gradcomm_status gradcommStatus = (expr);                                   \
    if (gradcommStatus != GRADCOMM_OK)                                         \
      return gradcommStatus;                                                   \
  } while (false)

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_INTERNAL_H
