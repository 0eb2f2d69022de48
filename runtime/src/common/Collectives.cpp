//===- Collectives.cpp - Collectives on the active group's transport ------===//
//
// Part of the GradComm project.
//
// Internal.h's collectives over Transport.h: chunked to what one transport
// call carries, waited for under the watchdog; the byte cost models.
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

void gradcomm::divideByGroupSize(float *data, int64_t count) {
  divideBySize(data, count, context().size);
}

void gradcomm::divideBySize(float *data, int64_t count, int size) {
  const float groupSize = static_cast<float>(size);
  for (int64_t i = 0; i < count; ++i)
    data[i] /= groupSize;
}

uint64_t gradcomm::allReduceBytes(uint64_t bytes, int size) {
  // Ring all-reduce: reduce-scatter + all-gather, 2 (n - 1) / n of the
  // buffer each way.
  return size > 1 ? 2 * bytes * (size - 1) / size : 0;
}

uint64_t gradcomm::broadcastBytes(uint64_t bytes, int size) {
  // Scatter + all-gather broadcast (what MPICH uses for large messages):
  // (n - 1) / n of the buffer each way on every rank.
  return size > 1 ? bytes * (size - 1) / size : 0;
}

uint64_t gradcomm::reduceScatterBytes(uint64_t bytes, int size) {
  // Ring reduce-scatter: (n - 1) / n of the buffer each way on every rank,
  // half of a ring all-reduce.
  return size > 1 ? bytes * (size - 1) / size : 0;
}

Transport &gradcomm::transport() { return *context().transport; }

/// Runs `start(chunk, chunkCount, transfer)` for each chunk of at most
/// kTransportMaxCount elements of `data`, then `started(transfer)`; stops
/// at the first failure, reported as `what`.
template <typename Start, typename Started>
static gradcomm_status inChunks(const Call &call, void *data, int64_t count,
                                Element element, const char *what,
                                Start &&start, Started &&started) {
  Transport &on = transport();
  auto *bytes = static_cast<char *>(data);
  for (int64_t offset = 0; offset < count; offset += kTransportMaxCount) {
    Transfer transfer;
    GRADCOMM_RETURN_IF_ERROR(call.transport(
        on,
        start(on, bytes + offset * elementBytes(element),
              std::min(count - offset, kTransportMaxCount), transfer),
        what));
    GRADCOMM_RETURN_IF_ERROR(started(on, transfer));
  }
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startAllReduce(const Call &call, void *data,
                                         int64_t count, Element element,
                                         Reduction reduction,
                                         std::vector<Transfer> &transfers,
                                         const char *what) {
  return inChunks(
      call, data, count, element, what,
      [&](Transport &on, void *chunk, int64_t n, Transfer &transfer) {
        return on.startAllReduce(chunk, n, element, reduction, transfer);
      },
      [&](Transport &, Transfer &transfer) {
        transfers.push_back(transfer);
        return GRADCOMM_OK;
      });
}

gradcomm_status gradcomm::allReduce(const Call &call, void *data, int64_t count,
                                    Element element, Reduction reduction,
                                    const char *what) {
  std::vector<Transfer> transfers;
  GRADCOMM_RETURN_IF_ERROR(
      startAllReduce(call, data, count, element, reduction, transfers, what));
  for (Transfer &transfer : transfers)
    GRADCOMM_RETURN_IF_ERROR(waitYielding(call, transfer, what));
  return GRADCOMM_OK;
}

gradcomm_status gradcomm::startAllReduceSum(const Call &call, float *data,
                                            int64_t count,
                                            std::vector<Transfer> &transfers) {
  return startAllReduce(call, data, count, Element::Float32, Reduction::Sum,
                        transfers, "all-reduce");
}

gradcomm_status gradcomm::allReduceSum(const Call &call, float *data,
                                       int64_t count) {
  return allReduce(call, data, count, Element::Float32, Reduction::Sum,
                   "all-reduce");
}

gradcomm_status gradcomm::broadcast(const Call &call, void *data, int64_t count,
                                    Element element, int root,
                                    const char *what) {
  // Each chunk waited for without monopolizing the core.
  return inChunks(
      call, data, count, element, what,
      [&](Transport &on, void *chunk, int64_t n, Transfer &transfer) {
        return on.startBroadcast(chunk, n, element, root, transfer);
      },
      [&](Transport &on, Transfer &transfer) {
        return waitYielding(call, on, transfer, what, root);
      });
}

gradcomm_status
gradcomm::startReduceScatter(const Call &call, const void *send, void *receive,
                             const std::vector<int64_t> &counts,
                             Element element, Reduction reduction,
                             Transfer &transfer, const char *what) {
  Transport &on = transport();
  return call.transport(on,
                        on.startReduceScatter(send, receive, counts.data(),
                                              element, reduction, transfer),
                        what);
}

gradcomm_status gradcomm::startAllGather(const Call &call, const void *send,
                                         int64_t count, Element element,
                                         void *receive, Transfer &transfer,
                                         const char *what) {
  Transport &on = transport();
  return call.transport(
      on, on.startAllGather(send, count, element, receive, transfer), what);
}

gradcomm_status gradcomm::allGather(const Call &call, const void *send,
                                    int64_t count, Element element,
                                    void *receive, const char *what) {
  Transfer transfer;
  GRADCOMM_RETURN_IF_ERROR(
      startAllGather(call, send, count, element, receive, transfer, what));
  return waitYielding(call, transfer, what);
}

gradcomm_status gradcomm::meanOverRanks(const Call &call, const float *x,
                                        int64_t count, float *mean) {
  std::copy(x, x + count, mean);
  GRADCOMM_RETURN_IF_ERROR(allReduceSum(call, mean, count));
  divideByGroupSize(mean, count);
  return GRADCOMM_OK;
}
