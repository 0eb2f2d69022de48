//===- Requests.cpp - Started calls, waits and the watchdog ---------------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sched.h>
#include <time.h>
#include <vector>

using namespace gradcomm;

gradcomm_status gradcomm::requireStartable(const Call &call,
                                           gradcomm_request *request,
                                           StartedForm form,
                                           const char *blocking) {
  if (!request)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "request pointer is null");
  *request = nullptr;
  if (!backend().starts(form))
    return call.fail(GRADCOMM_ERR_UNSUPPORTED,
                     std::string("this started form does not run on the ") +
                         backend().name() + " backend; use " + blocking);
  return GRADCOMM_OK;
}

gradcomm_request
gradcomm::trackRequest(std::unique_ptr<gradcomm_request_s> started) {
  if (!started->transport)
    started->transport = &transport();
  context().requestsInFlight += 1;
  return started.release();
}

gradcomm_status gradcomm::requireNoRequestInFlight(const Call &call,
                                                   const char *what) {
  const int64_t inFlight = context().requestsInFlight;
  if (inFlight == 0)
    return GRADCOMM_OK;
  return call.fail(GRADCOMM_ERR_STATE,
                   std::to_string(inFlight) +
                       " started call(s) not waited for; gradcomm_wait for "
                       "them before " +
                       what);
}

gradcomm_status gradcomm::waitPolling(
    const Call &call,
    const std::function<gradcomm_status(const Call &, bool *)> &test,
    const char *what, int peer) {
  // A blocking MPI call busy-polls: with more ranks than cores (4 ranks on
  // a 2-core machine), the waiting ranks take the cores the others need
  // to compute, and a step takes 100x longer. Test a little, then yield
  // the core between tests; with one rank per core the yield returns at
  // once and the wait keeps polling. A yield that returns late says
  // another thread wanted this core (a trainer's autograd thread beside
  // the hooks' communication thread, another rank): from then on the wait
  // sleeps between tests. Under Linux's CFS a yielding loop still takes a
  // share of the core it shares (the DDP hooks' waits took 290 ms of CPU
  // per ResNet-18 step from the ranks' backward, docs/performance.md); a
  // sleep gives it all back. The pause doubles up to kMaxPause, which
  // bounds how late a finished transfer is seen and how long the transport
  // goes without progress: UCX moves TCP data only inside a test, so a
  // longer pause idles the link (1 ms made the dense hook's ResNet-18 step
  // 1.6x slower at 1 Gbit/s, docs/performance.md); at 100 us the socket
  // buffers hold more than the link sends meanwhile.
  constexpr int kSpinsBeforeYield = 64;
  constexpr double kContendedYieldSeconds = 20e-6;
  constexpr long kFirstPauseNanoseconds = 5 * 1000;
  constexpr long kMaxPauseNanoseconds = 100 * 1000;
  const Context &ctx = context();
  const double start = now();
  long pause = 0; // nanoseconds; 0 while the core seems free
  for (int spins = 0;; ++spins) {
    bool finished = false;
    GRADCOMM_RETURN_IF_ERROR(test(call, &finished));
    if (finished)
      return GRADCOMM_OK;
    if (spins < kSpinsBeforeYield)
      continue;
    if (pause == 0) {
      const double before = now();
      sched_yield();
      if (now() - before > kContendedYieldSeconds)
        pause = kFirstPauseNanoseconds;
    } else {
      struct timespec sleep = {0, pause};
      nanosleep(&sleep, nullptr);
      pause = std::min(2 * pause, kMaxPauseNanoseconds);
    }
    if (ctx.timeoutSeconds > 0 && now() - start > ctx.timeoutSeconds)
      timedOut(call, what, peer, now() - start);
  }
}

gradcomm_status gradcomm::waitYielding(const Call &call, Transport &on,
                                       Transfer &transfer, const char *what,
                                       int peer) {
  return waitPolling(
      call,
      [&](const Call &, bool *finished) {
        return call.transport(on, on.test(transfer, finished), what);
      },
      what, peer);
}

gradcomm_status gradcomm::waitYielding(const Call &call, Transfer &transfer,
                                       const char *what, int peer) {
  return waitYielding(call, transport(), transfer, what, peer);
}

void gradcomm::alsoFinish(gradcomm_request_s &request,
                          std::function<void()> more) {
  request.finish = [first = std::move(request.finish), more = std::move(more)] {
    if (first)
      first();
    more();
  };
}

void gradcomm::alsoRelease(gradcomm_request_s &request,
                           std::function<void()> more) {
  request.release = [first = std::move(request.release),
                     more = std::move(more)] {
    if (first)
      first();
    more();
  };
}

void gradcomm::timedOut(const Call &call, const char *what, int peer,
                        double seconds) {
  const Context &ctx = context();
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%.1f", seconds);
  std::string peers = peer >= 0 ? "rank " + std::to_string(peer)
                                : std::string("the other ") +
                                      std::to_string(ctx.size - 1) +
                                      " rank(s) of the group";
  call.fail(
      GRADCOMM_ERR_TIMEOUT,
      std::string("timed out after ") + waited + " s in " + what +
          " waiting for " + peers +
          " (stopped, crashed, stuck on a device, or in another "
          "operation); a transport cannot cancel a collective, so the job "
          "is aborted (GRADCOMM_TIMEOUT sets the limit)");
  abortJob(gradcomm_last_error(), GRADCOMM_ERR_TIMEOUT);
}

void gradcomm::abortJob(const char *message, int code) {
  std::fprintf(stderr, "%s\n", message);
  std::fflush(stderr);
  Context &ctx = context();
  if (!ctx.initialized || !ctx.world.transport)
    std::abort();
  // MPICH's launcher kills every process as soon as one calls MPI_Abort,
  // and output still in its pipes is lost (seen in CI under load): give
  // it a quarter of a second to forward the message first.
  struct timespec pause = {0, 250 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  ctx.world.transport->abortJob(code);
  std::_Exit(code); // a transport's abortJob does not return; be sure
}

gradcomm_status gradcomm_set_timeout(double seconds) {
  return guarded("set_timeout", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    if (!(seconds >= 0) || seconds > 1e9)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "timeout must be in [0, 1e9] seconds, got " +
                           std::to_string(seconds));
    context().timeoutSeconds = seconds;
    return GRADCOMM_OK;
  });
}

double gradcomm::now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
