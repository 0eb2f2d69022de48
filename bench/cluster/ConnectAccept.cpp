//===- ConnectAccept.cpp - Can MPI join processes it did not start? -------===//
//
// Part of the GradComm project.
//
// Under torchrun no MPI process manager starts the ranks, so the runtime
// brings MPI up through its own PMI server answering from torch's store
// (src/bootstrap/PmiServer.cpp). MPI's own way to join independently
// started processes is MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect
// and MPI_Intercomm_merge. This probe tries that way with the MPI the build
// found: two singleton processes meet through a port name in a file, merge
// into one communicator, all-reduce 100 MB and put into a one-sided window
// (what the asynchronous ops need). It prints how far it got, or the MPI
// error that stopped it (docs/runtime.md, "Started without mpiexec").
//
//   probe=build/bench/calibrate/gradcomm-connect-accept-probe
//   rm -f port; $probe accept port & $probe connect port; wait
//
//===----------------------------------------------------------------------===//

#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// Prints MPI's message for `code` and ends the process with status 1.
void failOn(int code, const char *what, const char *side) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  std::printf("%s: %s failed: %.*s\n", side, what, length, text);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_SELF, 1);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 || (std::strcmp(argv[1], "accept") != 0 &&
                    std::strcmp(argv[1], "connect") != 0)) {
    std::fprintf(stderr, "usage: %s accept|connect <port file>\n", argv[0]);
    return 2;
  }
  const bool accepting = std::strcmp(argv[1], "accept") == 0;
  const char *side = argv[1];
  const std::string portFile = argv[2];
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  char port[MPI_MAX_PORT_NAME] = {};
  MPI_Comm inter = MPI_COMM_NULL;
  if (accepting) {
    failOn(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port", side);
    std::ofstream(portFile + ".tmp") << port;
    std::rename((portFile + ".tmp").c_str(), portFile.c_str());
    failOn(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
           "MPI_Comm_accept", side);
  } else {
    for (int tries = 0; access(portFile.c_str(), F_OK) != 0; ++tries) {
      if (tries == 3000) {
        std::printf("connect: no port name in %s after 30 s\n",
                    portFile.c_str());
        MPI_Abort(MPI_COMM_SELF, 1);
      }
      usleep(10000);
    }
    std::ifstream(portFile).getline(port, sizeof port);
    failOn(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
           "MPI_Comm_connect", side);
  }
  MPI_Comm world = MPI_COMM_NULL;
  failOn(MPI_Intercomm_merge(inter, accepting ? 0 : 1, &world),
         "MPI_Intercomm_merge", side);
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);

  std::vector<float> values(25 << 20, 1.0f);
  const int count = static_cast<int>(values.size());
  failOn(MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_FLOAT, MPI_SUM,
                       world),
         "MPI_Allreduce", side);
  double start = MPI_Wtime();
  for (int i = 0; i < 5; ++i)
    MPI_Allreduce(MPI_IN_PLACE, values.data(), count, MPI_FLOAT, MPI_SUM,
                  world);
  const double milliseconds = (MPI_Wtime() - start) / 5 * 1e3;

  float *base = nullptr;
  MPI_Win window = MPI_WIN_NULL;
  failOn(MPI_Win_allocate(64 * sizeof(float), sizeof(float), MPI_INFO_NULL,
                          world, &base, &window),
         "MPI_Win_allocate", side);
  const int peer = (rank + 1) % size;
  MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, window);
  failOn(MPI_Put(values.data(), 16, MPI_FLOAT, peer, 0, 16, MPI_FLOAT, window),
         "MPI_Put", side);
  MPI_Win_unlock(peer, window);
  MPI_Win_free(&window);
  std::printf("%s: rank %d of %d after the merge; 100 MB all-reduce %.1f ms; "
              "one-sided put ok\n",
              side, rank, size, milliseconds);
  MPI_Comm_free(&world);
  MPI_Comm_disconnect(&inter);
  if (accepting)
    MPI_Close_port(port);
  MPI_Finalize();
  return 0;
}
