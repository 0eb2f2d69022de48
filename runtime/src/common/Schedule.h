//===- Schedule.h - Coordination-free gossip peer schedules -----*- C++ -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_SCHEDULE_H
#define GRADCOMM_RUNTIME_SCHEDULE_H

#include "gradcomm/runtime.h"

#include <cstdint>

namespace gradcomm {

/// The peer of `rank` at `step`, or -1 when it sits out. Every rank
/// computes the same symmetric pairing, peer(peer(r)) == r, except under
/// GRADCOMM_SCHEDULE_RANDOM (an independent draw per rank). Hypercube
/// requires `size` to be a power of two (the caller checks).
int schedulePeer(gradcomm_schedule schedule, uint64_t seed, uint64_t step,
                 int rank, int size);

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_SCHEDULE_H
