//===- Context.cpp - The runtime's process-wide state and its binding ----===//
//
// Part of the GradComm project.
//
// The context, bound to the world's transport by bindWorld (the MPI
// bootstrap, src/bootstrap/MpiBootstrap.cpp, binds MPI's; the unit tests
// bind a double), and released by releaseRuntime.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdlib>

using namespace gradcomm;

Extensions &gradcomm::extensions() {
  // Constant-initialized (every member is nullptr), so the registrations
  // before main find it ready whatever the order of initialization.
  static Extensions registered;
  return registered;
}

Context &gradcomm::context() {
  // Never destroyed: a process that exits without gradcomm_finalize must
  // not release states through backends (and a device runtime) that exit
  // may already have torn down; the system takes the memory back.
  static Context *ctx = new Context;
  return *ctx;
}

/// GRADCOMM_BACKEND=cpu|cuda picks the backend at initialization.
gradcomm_status gradcomm::backendFromEnvironment(const Call &call) {
  const char *name = std::getenv("GRADCOMM_BACKEND");
  if (!name || std::string(name).empty() || std::string(name) == "cpu")
    return GRADCOMM_OK;
  if (std::string(name) != "cuda")
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "GRADCOMM_BACKEND must be cpu or cuda, got '" +
                         std::string(name) + "'");
  return gradcomm_set_backend(GRADCOMM_BACKEND_CUDA);
}

/// GRADCOMM_TIMEOUT: the watchdog's limit in seconds, or "off" (0).
static gradcomm_status timeoutFromEnvironment(const Call &call,
                                              double &seconds) {
  const char *text = std::getenv("GRADCOMM_TIMEOUT");
  if (!text || !*text)
    return GRADCOMM_OK;
  if (std::string(text) == "off") {
    seconds = 0;
    return GRADCOMM_OK;
  }
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 0) || value > 1e9)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "GRADCOMM_TIMEOUT must be seconds in [0, 1e9] or 'off', "
                     "got '" +
                         std::string(text) + "'");
  seconds = value;
  return GRADCOMM_OK;
}

static gradcomm_status
nonFinitePolicyFromEnvironment(const Call &call,
                               gradcomm_nonfinite_policy &policy) {
  const char *text = std::getenv("GRADCOMM_NONFINITE");
  if (!text || !*text)
    return GRADCOMM_OK;
  const std::string name(text);
  if (name == "error")
    policy = GRADCOMM_NONFINITE_ERROR;
  else if (name == "skip")
    policy = GRADCOMM_NONFINITE_SKIP;
  else if (name == "propagate")
    policy = GRADCOMM_NONFINITE_PROPAGATE;
  else
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "GRADCOMM_NONFINITE must be 'error', 'skip' or "
                     "'propagate', got '" +
                         name + "'");
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::bindWorld(const Call &call,
                                    std::unique_ptr<Transport> world,
                                    bool ownsMpi) {
  Context &ctx = context();
  ctx.world.rank = world->rank();
  ctx.world.size = world->size();
  ctx.world.transport = std::move(world);
  ctx.world.sequence = 0;
  ctx.world.sameNode.clear();
  ctx.active = nullptr;
  ctx.transport = ctx.world.transport.get();
  ctx.rank = ctx.world.rank;
  ctx.size = ctx.world.size;
  ctx.ownsMpi = ownsMpi;
  const char *check = std::getenv("GRADCOMM_CONSISTENCY_CHECK");
  ctx.consistencyCheck = !(check && std::string(check) == "0");
  GRADCOMM_RETURN_IF_ERROR(timeoutFromEnvironment(call, ctx.timeoutSeconds));
  GRADCOMM_RETURN_IF_ERROR(
      nonFinitePolicyFromEnvironment(call, ctx.nonFinitePolicy));
  ctx.initialized = true;
  return GRADCOMM_OK;
}

gradcomm_status Call::ensureInitialized() const {
  if (context().initialized)
    return GRADCOMM_OK;
  if (!extensions().initializeByDefault)
    return fail(GRADCOMM_ERR_NOT_INITIALIZED,
                "the runtime is not initialized and has no default transport");
  return extensions().initializeByDefault(*this);
}

void gradcomm::releaseRuntime() {
  activateGroup(nullptr);
  if (extensions().releaseWindows)
    extensions().releaseWindows();
  releaseGroups();
  releaseCudaBackend();
  context() = Context();
}

gradcomm_status gradcomm_rank(int *rank) {
  return guarded("rank", nullptr, [&](const Call &call) {
    if (!rank)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "'rank' is null");
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    *rank = context().world.rank;
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_size(int *size) {
  return guarded("size", nullptr, [&](const Call &call) {
    if (!size)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "'size' is null");
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    *size = context().world.size;
    return GRADCOMM_OK;
  });
}
