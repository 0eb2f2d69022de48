//===- Status.cpp - GradComm runtime status and error messages ------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "MpiTransport.h"

using namespace gradcomm;

/// Per thread, so concurrent callers never read each other's message.
static thread_local std::string lastError;

const char *gradcomm_last_error(void) { return lastError.c_str(); }

const char *gradcomm_status_name(gradcomm_status status) {
  switch (status) {
  case GRADCOMM_OK:
    return "GRADCOMM_OK";
  case GRADCOMM_ERR_INVALID_ARGUMENT:
    return "GRADCOMM_ERR_INVALID_ARGUMENT";
  case GRADCOMM_ERR_MPI:
    return "GRADCOMM_ERR_MPI";
  case GRADCOMM_ERR_NOT_INITIALIZED:
    return "GRADCOMM_ERR_NOT_INITIALIZED";
  case GRADCOMM_ERR_MISMATCH:
    return "GRADCOMM_ERR_MISMATCH";
  case GRADCOMM_ERR_NO_MEMORY:
    return "GRADCOMM_ERR_NO_MEMORY";
  case GRADCOMM_ERR_INTERNAL:
    return "GRADCOMM_ERR_INTERNAL";
  case GRADCOMM_ERR_NON_FINITE:
    return "GRADCOMM_ERR_NON_FINITE";
  case GRADCOMM_ERR_IO:
    return "GRADCOMM_ERR_IO";
  case GRADCOMM_ERR_STATE:
    return "GRADCOMM_ERR_STATE";
  case GRADCOMM_ERR_UNSUPPORTED:
    return "GRADCOMM_ERR_UNSUPPORTED";
  case GRADCOMM_ERR_TIMEOUT:
    return "GRADCOMM_ERR_TIMEOUT";
  }
  return "GRADCOMM_ERR_UNKNOWN";
}

gradcomm_status Call::fail(gradcomm_status status,
                           const std::string &cause) const {
  const Context &ctx = context();
  std::string message = "gradcomm: ";
  message += operation;
  if (*opName) {
    message += " '";
    message += opName;
    message += "'";
  }
  // A call in a world of its own: the runtime's rank, if any, is not its.
  if (world)
    message += std::string(" (") + world + ")";
  else if (!ctx.initialized)
    message += " (runtime not initialized)";
  else
    message += " on rank " + std::to_string(ctx.rank) + " of " +
               std::to_string(ctx.size);
  if (!world && ctx.initialized && ctx.active)
    message += " in " + ctx.active->label + " (rank " +
               std::to_string(ctx.world.rank) + " of " +
               std::to_string(ctx.world.size) + " in the job)";
  message += ": ";
  message += cause;
  lastError = std::move(message);
  return status;
}

gradcomm_status Call::adopt(gradcomm_status status,
                            const std::string &message) const {
  lastError = message;
  return status;
}

gradcomm_status Call::mpi(int mpiError, const char *what) const {
  if (mpiError == MPI_SUCCESS)
    return GRADCOMM_OK;
  return fail(GRADCOMM_ERR_MPI, std::string(what) + " failed: " +
                                    MpiTransport::describeError(mpiError));
}

gradcomm_status Call::transport(const ErrorSource &on, int error,
                                const char *what) const {
  if (error == 0)
    return GRADCOMM_OK;
  return fail(GRADCOMM_ERR_MPI, std::string(on.name()) + " " + what +
                                    " failed: " + on.describe(error));
}
