//===- MpiTransport.h - The transport over an MPI communicator --*- C++ -*-===//
//
// Part of the GradComm project.
//
// Transport.h over MPI: nonblocking collectives and point-to-point calls on
// one communicator, MPI_Comm_split for groups, MPI_COMM_TYPE_SHARED for the
// node map. The 16-bit sums are MPI user operations that add in float32.
// Windows are MPI-3's (MPI_Win_allocate, passive target), moved on while
// the ranks compute by a thread that calls into MPI.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_MPITRANSPORT_H
#define GRADCOMM_RUNTIME_MPITRANSPORT_H

#include "Transport.h"

#include <mpi.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

namespace gradcomm {

class MpiTransport final : public Transport {
public:
  /// Over `comm`, whose errors come back as codes (MPI_ERRORS_RETURN); frees
  /// it when destroyed if `owned` (a split's communicator, not the
  /// trainer's).
  static int over(MPI_Comm comm, bool owned, std::unique_ptr<Transport> *made);
  ~MpiTransport() override;

  const char *name() const override { return "MPI"; }
  std::string describe(int error) const override {
    return describeError(error);
  }
  /// MPI's words for `error` (an MPI error code, or this transport's own).
  static std::string describeError(int error);
  MPI_Comm communicator() const { return comm; }

  int startAllReduce(void *data, int64_t count, Element element,
                     Reduction reduction, Transfer &transfer) override;
  int startBroadcast(void *data, int64_t count, Element element, int root,
                     Transfer &transfer) override;
  int startAllGather(const void *send, int64_t count, Element element,
                     void *receive, Transfer &transfer) override;
  int startReduceScatter(const void *send, void *receive, const int64_t *counts,
                         Element element, Reduction reduction,
                         Transfer &transfer) override;
  int startSend(const void *data, int64_t count, Element element, int peer,
                Transfer &transfer) override;
  int startReceive(void *data, int64_t count, Element element, int peer,
                   Transfer &transfer) override;
  int test(Transfer &transfer, bool *done) override;

  int split(int color, int key, std::unique_ptr<Transport> *part) override;
  int splitByNode(std::unique_ptr<Transport> *node) override;
  [[noreturn]] void abortJob(int code) override;

  bool hasWindows() const override { return true; }
  int openWindow(int64_t bytes, std::unique_ptr<Window> *window) override;
  bool windowsNeedProgress() const override { return true; }
  int startWindowProgress(std::string *unavailable) override;
  void stopWindowProgress() override;

private:
  MpiTransport(MPI_Comm comm, bool owned, int rank, int size)
      : Transport(rank, size), comm(comm), owned(owned) {}

  MPI_Comm comm;
  bool owned;
  /// The int counts of started reduce-scatters, by handle: MPI reads them
  /// until the transfer completes.
  std::map<uint64_t, std::vector<int>> heldCounts;
  /// The window progress thread and its private communicator.
  std::thread progress;
  std::atomic<bool> stopping{false};
  MPI_Comm progressComm = MPI_COMM_NULL;
};

/// The MPI communicator under `transport`, or MPI_COMM_NULL when it is
/// another transport (MPI's own start-up and finalize use it).
MPI_Comm mpiCommunicatorOf(const Transport &transport);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_MPITRANSPORT_H
