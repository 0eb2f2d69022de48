//===- MpiTransport.cpp - The transport over an MPI communicator ----------===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "MpiTransport.h"
#include "HalfFloat.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace gradcomm;
using namespace gradcomm::half;

namespace {

/// An error code of this transport that is not MPI's: a count above what
/// one MPI call takes (MPI's codes are at most MPI_ERR_LASTCODE).
constexpr int kCountTooLarge = -1;

MPI_Datatype datatypeOf(Element element) {
  switch (element) {
  case Element::Byte:
    return MPI_BYTE;
  case Element::Int32:
    return MPI_INT32_T;
  case Element::Int64:
    return MPI_INT64_T;
  case Element::Float32:
    return MPI_FLOAT;
  case Element::Float64:
    return MPI_DOUBLE;
  case Element::Bfloat16:
  case Element::Float16:
    return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// The 16-bit sums: inout[i] = in[i] + inout[i], added in float32 and
// rounded once, in blocks widened and narrowed by the array conversions.
// Float addition commutes bit for bit, so MPI may combine in any order and
// every rank still receives the same bits.
template <void (*Widen)(const uint16_t *, float *, int64_t),
          void (*Narrow)(const float *, uint16_t *, int64_t)>
void sumSixteenBits(void *in, void *inout, int *length, MPI_Datatype *) {
  constexpr int kBlock = 512;
  float a[kBlock], b[kBlock];
  const auto *x = static_cast<const uint16_t *>(in);
  auto *y = static_cast<uint16_t *>(inout);
  for (int first = 0; first < *length; first += kBlock) {
    const int n = std::min(kBlock, *length - first);
    Widen(x + first, a, n);
    Widen(y + first, b, n);
    for (int i = 0; i < n; ++i)
      b[i] += a[i];
    Narrow(b, y + first, n);
  }
}

/// The MPI operation for `reduction` over `element`; the 16-bit sums are
/// made once per process (MPI frees user operations at MPI_Finalize).
int operationOf(Element element, Reduction reduction, MPI_Op *op) {
  if (element == Element::Bfloat16 || element == Element::Float16) {
    static MPI_Op bfloat16 = MPI_OP_NULL, half = MPI_OP_NULL;
    MPI_Op &made = element == Element::Bfloat16 ? bfloat16 : half;
    if (made == MPI_OP_NULL) {
      int error =
          MPI_Op_create(element == Element::Bfloat16
                            ? sumSixteenBits<widenBfloat16, narrowBfloat16>
                            : sumSixteenBits<widenHalf, narrowHalf>,
                        /*commute=*/1, &made);
      if (error != MPI_SUCCESS)
        return error;
    }
    *op = made;
    return MPI_SUCCESS;
  }
  *op = reduction == Reduction::Sum   ? MPI_SUM
        : reduction == Reduction::Max ? MPI_MAX
                                      : MPI_MIN;
  return MPI_SUCCESS;
}

static_assert(sizeof(MPI_Request) <= sizeof(uint64_t),
              "an MPI_Request must fit a Transfer's handle");

void hold(Transfer &transfer, MPI_Request request) {
  transfer.handle = 0;
  std::memcpy(&transfer.handle, &request, sizeof(request));
  transfer.active = true;
}

MPI_Request requestOf(const Transfer &transfer) {
  MPI_Request request;
  std::memcpy(&request, &transfer.handle, sizeof(request));
  return request;
}

/// Starts `post(&request)` into `transfer` when `count` fits an int.
template <typename Post>
int start(int64_t count, Transfer &transfer, Post &&post) {
  if (count < 0 || count > kTransportMaxCount)
    return kCountTooLarge;
  MPI_Request request = MPI_REQUEST_NULL;
  int error = post(static_cast<int>(count), &request);
  if (error == MPI_SUCCESS)
    hold(transfer, request);
  return error;
}

} // namespace

int MpiTransport::over(MPI_Comm comm, bool owned,
                       std::unique_ptr<Transport> *made) {
  int error = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  if (error == MPI_SUCCESS)
    error = MPI_Comm_rank(comm, &rank);
  if (error == MPI_SUCCESS)
    error = MPI_Comm_size(comm, &size);
  if (error != MPI_SUCCESS)
    return error;
  made->reset(new MpiTransport(comm, owned, rank, size));
  return MPI_SUCCESS;
}

MpiTransport::~MpiTransport() {
  stopWindowProgress();
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (owned && !finalized)
    MPI_Comm_free(&comm);
}

std::string MpiTransport::describeError(int error) {
  if (error == kCountTooLarge)
    return "more than " + std::to_string(kTransportMaxCount) +
           " elements in one call";
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(error, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(error);
  return std::string(text, length);
}

int MpiTransport::startAllReduce(void *data, int64_t count, Element element,
                                 Reduction reduction, Transfer &transfer) {
  MPI_Op op = MPI_OP_NULL;
  int error = operationOf(element, reduction, &op);
  if (error != MPI_SUCCESS)
    return error;
  return start(count, transfer, [&](int n, MPI_Request *request) {
    return MPI_Iallreduce(MPI_IN_PLACE, data, n, datatypeOf(element), op, comm,
                          request);
  });
}

int MpiTransport::startBroadcast(void *data, int64_t count, Element element,
                                 int root, Transfer &transfer) {
  return start(count, transfer, [&](int n, MPI_Request *request) {
    return MPI_Ibcast(data, n, datatypeOf(element), root, comm, request);
  });
}

int MpiTransport::startAllGather(const void *send, int64_t count,
                                 Element element, void *receive,
                                 Transfer &transfer) {
  return start(count, transfer, [&](int n, MPI_Request *request) {
    return MPI_Iallgather(send, n, datatypeOf(element), receive, n,
                          datatypeOf(element), comm, request);
  });
}

int MpiTransport::startReduceScatter(const void *send, void *receive,
                                     const int64_t *counts, Element element,
                                     Reduction reduction, Transfer &transfer) {
  std::vector<int> ints(size());
  for (int r = 0; r < size(); ++r) {
    if (counts[r] < 0 || counts[r] > kTransportMaxCount)
      return kCountTooLarge;
    ints[r] = static_cast<int>(counts[r]);
  }
  MPI_Op op = MPI_OP_NULL;
  int error = operationOf(element, reduction, &op);
  if (error != MPI_SUCCESS)
    return error;
  MPI_Request request = MPI_REQUEST_NULL;
  error = MPI_Ireduce_scatter(send, receive, ints.data(), datatypeOf(element),
                              op, comm, &request);
  if (error != MPI_SUCCESS)
    return error;
  hold(transfer, request);
  heldCounts[transfer.handle] = std::move(ints);
  return MPI_SUCCESS;
}

int MpiTransport::startSend(const void *data, int64_t count, Element element,
                            int peer, Transfer &transfer) {
  return start(count, transfer, [&](int n, MPI_Request *request) {
    return MPI_Isend(data, n, datatypeOf(element), peer, 0, comm, request);
  });
}

int MpiTransport::startReceive(void *data, int64_t count, Element element,
                               int peer, Transfer &transfer) {
  return start(count, transfer, [&](int n, MPI_Request *request) {
    return MPI_Irecv(data, n, datatypeOf(element), peer, 0, comm, request);
  });
}

int MpiTransport::test(Transfer &transfer, bool *done) {
  if (!transfer.active) {
    *done = true;
    return MPI_SUCCESS;
  }
  MPI_Request request = requestOf(transfer);
  int finished = 0;
  int error = MPI_Test(&request, &finished, MPI_STATUS_IGNORE);
  if (error != MPI_SUCCESS)
    return error;
  const uint64_t started = transfer.handle;
  hold(transfer, request);
  transfer.active = finished == 0;
  *done = finished != 0;
  if (*done)
    heldCounts.erase(started);
  return MPI_SUCCESS;
}

int MpiTransport::split(int color, int key, std::unique_ptr<Transport> *part) {
  MPI_Comm made = MPI_COMM_NULL;
  int error = MPI_Comm_split(comm, color, key, &made);
  if (error != MPI_SUCCESS)
    return error;
  error = over(made, /*owned=*/true, part);
  if (error != MPI_SUCCESS)
    MPI_Comm_free(&made);
  return error;
}

int MpiTransport::splitByNode(std::unique_ptr<Transport> *node) {
  MPI_Comm made = MPI_COMM_NULL;
  int error = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank(),
                                  MPI_INFO_NULL, &made);
  if (error != MPI_SUCCESS)
    return error;
  error = over(made, /*owned=*/true, node);
  if (error != MPI_SUCCESS)
    MPI_Comm_free(&made);
  return error;
}

void MpiTransport::abortJob(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(comm, code);
  std::_Exit(code); // MPI_Abort does not return; be sure.
}

namespace {

/// A window made by MPI_Win_allocate; errors come back as codes.
class MpiWindow final : public Window {
public:
  MpiWindow(MPI_Win win, char *base, int64_t bytes)
      : Window(base, bytes), win(win) {}
  ~MpiWindow() override {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Win_free(&win);
  }

  const char *name() const override { return "MPI"; }
  std::string describe(int error) const override {
    return MpiTransport::describeError(error);
  }

  int lock(int rank, bool exclusive) override {
    return MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, rank,
                        0, win);
  }
  int unlock(int rank) override { return MPI_Win_unlock(rank, win); }
  int flush(int rank) override { return MPI_Win_flush(rank, win); }
  int syncLocal() override { return MPI_Win_sync(win); }

  int put(const void *data, int64_t bytes, int rank, int64_t offset) override {
    if (bytes < 0 || bytes > kTransportMaxCount)
      return kCountTooLarge;
    const int n = static_cast<int>(bytes);
    return MPI_Put(data, n, MPI_BYTE, rank, offset, n, MPI_BYTE, win);
  }
  int storeAtomic(const int32_t *data, int count, int rank,
                  int64_t offset) override {
    return MPI_Accumulate(data, count, MPI_INT32_T, rank, offset, count,
                          MPI_INT32_T, MPI_REPLACE, win);
  }
  int readAtomic(float *data, int64_t count, int rank,
                 int64_t offset) override {
    if (count < 0 || count > kTransportMaxCount)
      return kCountTooLarge;
    const int n = static_cast<int>(count);
    // MPI_NO_OP ignores the origin: none is passed (a full-size one makes
    // MPICH 4.0 over UCX ship it and fail with "message truncated").
    return MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, data, n, MPI_FLOAT, rank,
                              offset, n, MPI_FLOAT, MPI_NO_OP, win);
  }
  int accumulateSum(const float *data, int64_t count, int rank,
                    int64_t offset) override {
    if (count < 0 || count > kTransportMaxCount)
      return kCountTooLarge;
    const int n = static_cast<int>(count);
    return MPI_Accumulate(data, n, MPI_FLOAT, rank, offset, n, MPI_FLOAT,
                          MPI_SUM, win);
  }

private:
  MPI_Win win;
};

} // namespace

int MpiTransport::openWindow(int64_t bytes, std::unique_ptr<Window> *window) {
  if (bytes < 0)
    return kCountTooLarge;
  MPI_Win win = MPI_WIN_NULL;
  char *base = nullptr;
  int error = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL,
                               comm, &base, &win);
  if (error != MPI_SUCCESS)
    return error;
  // Made: handed out even if what follows fails, since freeing it is
  // collective and the other ranks may have got this far.
  *window = std::make_unique<MpiWindow>(win, base, bytes);
  // Errors come back as codes (and so as messages), as on the communicator.
  error = MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  if (error == MPI_SUCCESS)
    error = (*window)->lock(rank(), /*exclusive=*/true);
  if (error != MPI_SUCCESS)
    return error;
  std::memset(base, 0, static_cast<size_t>(bytes));
  return (*window)->unlock(rank());
}

// A put to a rank busy computing completes only when that rank next calls
// MPI; while windows are open a thread calls into MPI (MPI_Iprobe on a
// private communicator) every 50 us. It needs MPI_THREAD_MULTIPLE, and it
// must be out of MPI before MPI_Finalize starts (MPI-3.1 section 12.4.3):
// the runtime stops it before it finalizes.
int MpiTransport::startWindowProgress(std::string *unavailable) {
  unavailable->clear();
  if (progress.joinable())
    return MPI_SUCCESS;
  int level = MPI_THREAD_SINGLE;
  int error = MPI_Query_thread(&level);
  if (error != MPI_SUCCESS)
    return error;
  if (level < MPI_THREAD_MULTIPLE) {
    *unavailable = "MPI was initialized without MPI_THREAD_MULTIPLE";
    return MPI_SUCCESS;
  }
  error = MPI_Comm_dup(comm, &progressComm);
  if (error != MPI_SUCCESS)
    return error;
  stopping = false;
  progress = std::thread([this] {
    while (!stopping.load(std::memory_order_relaxed)) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progressComm, &flag,
                 MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  return MPI_SUCCESS;
}

void MpiTransport::stopWindowProgress() {
  if (!progress.joinable())
    return;
  stopping = true;
  progress.join();
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Comm_free(&progressComm);
}

MPI_Comm gradcomm::mpiCommunicatorOf(const Transport &transport) {
  const auto *mpi = dynamic_cast<const MpiTransport *>(&transport);
  return mpi ? mpi->communicator() : MPI_COMM_NULL;
}
