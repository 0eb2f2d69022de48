//===- CostModel.h - Predicted communication time of GradComm ops -*- C++
//-*-===//
//
// Part of the GradComm project.
//
// An alpha-beta model of the collectives GradComm's runtime issues, with
// the algorithms MPICH picks for each message size, plus the memory passes
// of the compression kernels. docs/scaling.md gives the formulas and what
// they assume.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_ANALYSIS_COSTMODEL_H
#define GRADCOMM_ANALYSIS_COSTMODEL_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::gradcomm {

/// A cluster: ranks, the per-message latency and per-link bandwidth of its
/// network, and the memory bandwidth of one rank (for the kernels).
struct ClusterModel {
  int64_t ranks = 4;
  double latencySeconds = 5e-6;
  double linkBytesPerSecond = 1.25e9;   // 10 Gbit/s
  double memoryBytesPerSecond = 2.0e10; // 20 GB/s
};

/// Parses "10Gbit", "1.5Gbit/s", "100Mbit", "125MB/s", "2GB/s" or a plain
/// number of bytes per second.
llvm::Expected<double> parseBandwidth(StringRef text);
/// Parses "5us", "0.2ms", "1s" or a plain number of seconds.
llvm::Expected<double> parseDuration(StringRef text);
/// Reads a calibration file: `key = value` lines (`ranks`, `latency`,
/// `bandwidth`, `memory_bandwidth`), `#` comments, on top of `model`.
llvm::Error applyCalibration(StringRef text, ClusterModel &model);

/// Time of one collective of `bytes` (per rank) on `model`.
double allReduceSeconds(const ClusterModel &model, double bytes);
double broadcastSeconds(const ClusterModel &model, double bytes);
double allGatherSeconds(const ClusterModel &model, double bytesPerRank);
double sendRecvSeconds(const ClusterModel &model, double bytes);

/// What one strategy costs one tensor per step.
struct Prediction {
  double seconds = 0;   // communication and kernels, not overlapped
  double bytesSent = 0; // per rank
};

/// The strategies, for a tensor of `elements` float32 values. Every
/// runtime call also joins the agreement (one all-reduce of 26 int64).
Prediction predictDense(const ClusterModel &model, int64_t elements);
Prediction predictScaleCom(const ClusterModel &model, int64_t elements,
                           int64_t ratio);
Prediction predictLocalTopk(const ClusterModel &model, int64_t elements,
                            int64_t ratio);
Prediction predictGossip(const ClusterModel &model, int64_t elements);
Prediction predictEasgd(const ClusterModel &model, int64_t elements,
                        int64_t period);

} // namespace mlir::gradcomm

#endif // GRADCOMM_ANALYSIS_COSTMODEL_H
