//===- UcxTuning.h - UCX's protocol choice where only TCP joins nodes -----===//
//
// Part of the GradComm project.
//
// Over TCP, UCX's rendezvous protocol for large messages (a request, a
// reply, then the bulk in zero-copy fragments each needing progress on
// both sides) runs one in three 44 MB all-reduces at 1.5x the time of
// streaming the same bytes eagerly, and most of them once several are in
// flight: at 1 Gbit/s, 551 ms instead of 372 ms, where PyTorch's gloo
// takes 370 (bench/peers, docs/performance.md "Against PyTorch's own
// compression"). Eager messages stream at the link's rate. So where UCX
// can only reach other nodes through TCP, the runtime asks MPI's UCX for
// eager messages of every size before MPI starts; RDMA networks keep
// UCX's own choice, and a UCX_RNDV_THRESH set by the user always wins.
//
// Depends on nothing else in the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_UCXTUNING_H
#define GRADCOMM_RUNTIME_UCXTUNING_H

namespace gradcomm {

/// True when UCX can join nodes by TCP alone: `tls` (UCX_TLS; null when
/// unset) names only TCP and same-node transports, or selects
/// automatically ("all", unset, or an exclusion list "^...") on a node
/// without RDMA devices (`rdmaDevicePresent`: /sys/class/infiniband holds
/// one).
bool ucxJoinsNodesByTcpOnly(const char *tls, bool rdmaDevicePresent);

/// Sets UCX_RNDV_THRESH=inf (eager messages of every size) when the user
/// has not set it and ucxJoinsNodesByTcpOnly holds for this process's
/// environment and node. Call before MPI starts.
void preferEagerUcxOverTcp();

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_UCXTUNING_H
