//===- RendezvousTest.cpp - MPI started without mpiexec -------------------===//
//
// Part of the GradComm project.
//
// `gradcomm-runtime-rendezvous-test N` forks N processes, as torchrun
// would: no mpiexec, no PMI in the environment. Each joins through
// gradcomm_init_with_rendezvous over a directory (a file per key, the
// stand-in for a torch.distributed store), then runs a dense all-reduce, a
// ScaleCom step, a synchronous and an asynchronous (one-sided) gossip step
// and checks every result against what it computes itself, and ends with
// gradcomm_finalize. `... N missing` starts one rank fewer than N: every
// started rank must end in failure within the rendezvous's timeout,
// having named the key it waited for, instead of hanging. Plain main: MPI is
// initialized once per process.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/runtime.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

/// A rendezvous over a directory: one file per key, written under a
/// temporary name and renamed, so a reader sees all of a value or none.
struct DirectoryRendezvous {
  std::string directory;
  double timeoutSeconds;
};

std::string pathOf(const DirectoryRendezvous &rendezvous, const char *key) {
  std::string name = key;
  for (char &c : name)
    if (c == '/')
      c = '_';
  return rendezvous.directory + "/" + name;
}

int setKey(void *user, const char *key, const char *value) {
  auto &rendezvous = *static_cast<DirectoryRendezvous *>(user);
  std::string path = pathOf(rendezvous, key);
  std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary);
    out << value;
    if (!out)
      return 1;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0 ? 0 : 1;
}

int getKey(void *user, const char *key, char *value, size_t capacity) {
  auto &rendezvous = *static_cast<DirectoryRendezvous *>(user);
  std::string path = pathOf(rendezvous, key);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(rendezvous.timeoutSeconds);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    if (in) {
      std::string text((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
      if (text.size() + 1 > capacity)
        return 1;
      std::memcpy(value, text.c_str(), text.size() + 1);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return 1;
}

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s (%s)\n", rank,    \
                   __FILE__, __LINE__, #cond, gradcomm_last_error());          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/// One rank's whole run; its exit status.
int runRank(int rank, int size, DirectoryRendezvous &directory) {
  gradcomm_rendezvous rendezvous{setKey, getKey, &directory};
  CHECK(gradcomm_init_with_rendezvous(rank, size, &rendezvous) == GRADCOMM_OK);
  // Idempotent for the same rank and size; refused for another.
  CHECK(gradcomm_init_with_rendezvous(rank, size, &rendezvous) == GRADCOMM_OK);
  CHECK(gradcomm_init_with_rendezvous(rank, size + 1, &rendezvous) ==
        GRADCOMM_ERR_INVALID_ARGUMENT);
  CHECK(std::strstr(gradcomm_last_error(), "already initialized"));
  int gotRank = -1, gotSize = -1;
  CHECK(gradcomm_rank(&gotRank) == GRADCOMM_OK);
  CHECK(gradcomm_size(&gotSize) == GRADCOMM_OK);
  CHECK(gotRank == rank && gotSize == size);

  // Dense: the sum of (rank + 1) i over the ranks, exact in float.
  constexpr int64_t kCount = 1000;
  std::vector<float> data(kCount);
  for (int64_t i = 0; i < kCount; ++i)
    data[i] = static_cast<float>((rank + 1) * i);
  CHECK(gradcomm_dense_all_reduce_f32("rdv.dense", data.data(), kCount,
                                      GRADCOMM_REDUCE_SUM) == GRADCOMM_OK);
  const float ranksSum = static_cast<float>(size * (size + 1) / 2);
  for (int64_t i = 0; i < kCount; ++i)
    CHECK(data[i] == ranksSum * static_cast<float>(i));

  // ScaleCom, k = 10 of 1000: every rank's gradient is i, so the leader's
  // selection is the 10 largest indices and their sum is size * i.
  std::vector<float> grad(kCount), out(kCount, -1.0f);
  for (int64_t i = 0; i < kCount; ++i)
    grad[i] = static_cast<float>(i);
  CHECK(gradcomm_scalecom_f32("rdv.scalecom", grad.data(), out.data(), kCount,
                              10, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                              GRADCOMM_REDUCE_SUM) == GRADCOMM_OK);
  for (int64_t i = 0; i < kCount; ++i)
    CHECK(out[i] == (i >= kCount - 10 ? static_cast<float>(size * i) : 0.0f));

  // Synchronous gossip with a peer: at 2 ranks both end at the mean.
  std::vector<float> replica(kCount, static_cast<float>(rank));
  CHECK(gradcomm_gossip_exchange_f32("rdv.gossip", replica.data(), kCount,
                                     GRADCOMM_SCHEDULE_MATCHING, 0.5f, 1,
                                     1) == GRADCOMM_OK);
  if (size == 2)
    for (float value : replica)
      CHECK(value == 0.5f);

  // Asynchronous gossip: MPI's one-sided windows work as under mpiexec.
  std::vector<float> async(kCount, 1.0f);
  for (int step = 0; step < 3; ++step)
    CHECK(gradcomm_gossip_async_f32("rdv.async", async.data(), kCount,
                                    GRADCOMM_SCHEDULE_RANDOM, 0.5f, 1,
                                    1) == GRADCOMM_OK);
  for (float value : async)
    CHECK(value == 1.0f); // a mix of equal replicas

  CHECK(gradcomm_finalize() == GRADCOMM_OK);
  std::printf("rank %d of %d: ok\n", rank, size);
  return 0;
}

/// A rank of a job that never completes: its init must fail, naming the
/// rendezvous key it waited for, well within the test's own limit. MPICH
/// ends a process whose MPI_Init failed, so this rank's stderr goes to a
/// file the parent reads.
int runRankOfIncompleteJob(int rank, int size, DirectoryRendezvous &directory) {
  std::string log = directory.directory + "/stderr." + std::to_string(rank);
  if (!std::freopen(log.c_str(), "w", stderr))
    return 1;
  gradcomm_rendezvous rendezvous{setKey, getKey, &directory};
  gradcomm_status status =
      gradcomm_init_with_rendezvous(rank, size, &rendezvous);
  std::fprintf(stderr, "%s\n", gradcomm_last_error());
  return status == GRADCOMM_OK ? 0 : 3;
}

/// What the parent expects of a rank of the incomplete job: it ended in
/// failure and said which rendezvous key never came.
bool failedNamingTheRendezvous(const DirectoryRendezvous &directory, int rank,
                               int status) {
  std::ifstream in(directory.directory + "/stderr." + std::to_string(rank));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  bool named =
      text.find("gradcomm: init_with_rendezvous on rank " +
                std::to_string(rank)) != std::string::npos &&
      text.find("the rendezvous gave no value for") != std::string::npos;
  bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  if (!named || !failed)
    std::fprintf(stderr, "rank %d: exit status %d, stderr:\n%s\n", rank, status,
                 text.c_str());
  return named && failed;
}

} // namespace

int main(int argc, char **argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 2;
  const bool missing = argc > 2 && std::strcmp(argv[2], "missing") == 0;
  if (size < 1 || size > 64) {
    std::fprintf(stderr, "usage: %s RANKS [missing]\n", argv[0]);
    return 2;
  }
  char templ[] = "/tmp/gradcomm-rendezvous-XXXXXX";
  if (!mkdtemp(templ)) {
    std::perror("mkdtemp");
    return 2;
  }
  // Nothing of mpiexec's may leak in from the caller (ctest under
  // mpiexec, say): the ranks must come up through the rendezvous alone.
  for (const char *name : {"PMI_FD", "PMI_PORT", "PMI_RANK", "PMI_SIZE",
                           "PMI_ID", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"})
    unsetenv(name);
  DirectoryRendezvous directory{templ, missing ? 3.0 : 60.0};
  const int started = missing ? size - 1 : size;
  std::vector<pid_t> children;
  for (int rank = 0; rank < started; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      std::fflush(stdout);
      _exit(missing ? runRankOfIncompleteJob(rank, size, directory)
                    : runRank(rank, size, directory));
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (int rank = 0; rank < started; ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    bool passed = missing ? failedNamingTheRendezvous(directory, rank, status)
                          : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!passed)
      ++failures;
  }
  std::string cleanup = std::string("rm -rf ") + templ;
  if (std::system(cleanup.c_str()) != 0)
    std::fprintf(stderr, "could not remove %s\n", templ);
  std::printf("%d of %d ranks %s\n", started - failures, started,
              missing ? "failed as they should" : "passed");
  return failures == 0 ? 0 : 1;
}
