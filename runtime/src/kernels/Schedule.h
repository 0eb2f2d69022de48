//===- Schedule.h - Coordination-free gossip peer schedules -----*- C++ -*-===//
//
// Part of the GradComm project.
//
// Who exchanges with whom at each gossip step, computed by every rank on
// its own from (schedule, seed, step, rank, size), and which group sizes a
// schedule serves. Header-only and free of the runtime's state: the
// runtime's gossip ops and the compiler's simulator (gradcomm-plan
// --simulate) include this one definition, so a predicted exchange is the
// one the runtime makes.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_SCHEDULE_H
#define GRADCOMM_RUNTIME_SCHEDULE_H

#include "gradcomm/runtime.h"

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace gradcomm {

namespace schedule_detail {

/// SplitMix64: a tiny, portable generator, so the matching is the same on
/// every rank, compiler and platform (std:: distributions are not).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound) by rejection, so no modulo bias.
  uint64_t below(uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do
      x = next();
    while (x >= limit);
    return x % bound;
  }
};

inline int matchingPeer(uint64_t seed, uint64_t step, int rank, int size) {
  // Seeded by (seed, step) only: the gossip stream is independent of any
  // data RNG and of the rank.
  SplitMix64 rng{seed * 0x2545f4914f6cdd1dull ^ (step + 1)};
  std::vector<int> perm(size);
  std::iota(perm.begin(), perm.end(), 0);
  for (int i = size - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.below(static_cast<uint64_t>(i) + 1)]);
  // Neighbours in the permutation pair up; with odd n the last sits out.
  for (int i = 0; i + 1 < size; i += 2) {
    if (perm[i] == rank)
      return perm[i + 1];
    if (perm[i + 1] == rank)
      return perm[i];
  }
  return -1;
}

inline int ringPeer(uint64_t step, int rank, int size) {
  // Right neighbour when step + rank is even, left otherwise: r pairs with
  // r + 1 exactly when r + 1 pairs with r. With odd n the pair across the
  // wrap-around would clash, so the rank without a partner sits out.
  bool right = (step + static_cast<uint64_t>(rank)) % 2 == 0;
  int peer = right ? rank + 1 : rank - 1;
  if (size % 2 == 0)
    return (peer + size) % size;
  return peer >= 0 && peer < size ? peer : -1;
}

/// Only for a power-of-two `size` (scheduleRefusal says so otherwise).
inline int hypercubePeer(uint64_t step, int rank, int size) {
  int dimensions = 0;
  while ((1 << dimensions) < size)
    ++dimensions;
  return rank ^ (1 << (step % dimensions));
}

inline int randomPeer(uint64_t seed, uint64_t step, int rank, int size) {
  // Seeded by (seed, rank, step): every rank draws its own peer.
  SplitMix64 rng{seed * 0x2545f4914f6cdd1dull ^
                 (static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull) ^
                 (step + 1) * 0xd1b54a32d192ed03ull};
  int other = static_cast<int>(rng.below(static_cast<uint64_t>(size) - 1));
  return other < rank ? other : other + 1;
}

} // namespace schedule_detail

/// Why `schedule` cannot serve a group of `size` ranks (`pairing`: the
/// synchronous exchange, which needs peer(peer(r)) == r), or nullptr when
/// it can. The messages are the runtime's; callers add the numbers.
inline const char *scheduleRefusal(gradcomm_schedule schedule, int64_t size,
                                   bool pairing) {
  switch (schedule) {
  case GRADCOMM_SCHEDULE_MATCHING:
  case GRADCOMM_SCHEDULE_RING:
    return nullptr;
  case GRADCOMM_SCHEDULE_HYPERCUBE:
    // Every rank must have a partner in every dimension.
    return size > 0 && (size & (size - 1)) == 0
               ? nullptr
               : "the hypercube schedule needs a power-of-two number of ranks";
  case GRADCOMM_SCHEDULE_RANDOM:
    return pairing ? "the random schedule is not a pairing: it serves "
                     "asynchronous gossip only"
                   : nullptr;
  }
  return "unknown schedule";
}

/// The peer of `rank` at `step`, or -1 when it sits out. Every rank
/// computes the same symmetric pairing, peer(peer(r)) == r, except under
/// GRADCOMM_SCHEDULE_RANDOM (an independent draw per rank). Only for a
/// schedule and size that scheduleRefusal accepts.
inline int schedulePeer(gradcomm_schedule schedule, uint64_t seed,
                        uint64_t step, int rank, int size) {
  using namespace schedule_detail;
  if (size < 2)
    return -1;
  switch (schedule) {
  case GRADCOMM_SCHEDULE_MATCHING:
    return matchingPeer(seed, step, rank, size);
  case GRADCOMM_SCHEDULE_RING:
    return ringPeer(step, rank, size);
  case GRADCOMM_SCHEDULE_HYPERCUBE:
    return hypercubePeer(step, rank, size);
  case GRADCOMM_SCHEDULE_RANDOM:
    return randomPeer(seed, step, rank, size);
  }
  return -1;
}

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_SCHEDULE_H
