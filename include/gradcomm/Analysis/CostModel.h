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
#include "llvm/ADT/SmallVector.h"
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
  /// Measured seconds per element of the runtime's local work for one
  /// call, when known (gradcomm-calibrate times the runtime on one rank);
  /// 0: estimated from the bytes each kernel moves at the memory bandwidth.
  struct KernelTimes {
    double scalecomChunk = 0;
    double scalecomExact = 0;
    double localTopk = 0;
  } kernelSecondsPerElement;
};

/// Parses "10Gbit", "1.5Gbit/s", "100Mbit", "125MB/s", "2GB/s" or a plain
/// number of bytes per second.
llvm::Expected<double> parseBandwidth(StringRef text);
/// Parses "5us", "0.2ms", "1s" or a plain number of seconds.
llvm::Expected<double> parseDuration(StringRef text);
/// Reads a calibration file: `key = value` lines (`ranks`, `latency`,
/// `bandwidth`, `memory_bandwidth`, and the measured kernel times per
/// element `kernel_scalecom_chunk`, `kernel_scalecom_exact`,
/// `kernel_local_topk`), `#` comments, on top of `model`.
llvm::Error applyCalibration(StringRef text, ClusterModel &model);

/// A cluster as a user describes it: a calibration file first, then each
/// quantity given (non-empty, non-zero) on top. The same fields are
/// gradcomm-plan's flags and the options of gradcomm-scalecom's
/// policy=auto.
struct ClusterSpec {
  std::string calibrationFile;
  int64_t ranks = 0;
  std::string bandwidth;
  std::string latency;
  std::string memoryBandwidth;
};

/// The model `spec` describes, on top of the defaults; errors name the
/// file, line or field that is wrong.
llvm::Expected<ClusterModel> buildClusterModel(const ClusterSpec &spec);

/// Time of one collective of `bytes` (per rank) on `model`.
double allReduceSeconds(const ClusterModel &model, double bytes);
double broadcastSeconds(const ClusterModel &model, double bytes);
double allGatherSeconds(const ClusterModel &model, double bytesPerRank);
double sendRecvSeconds(const ClusterModel &model, double bytes);
/// A reduce-scatter of `bytes` (the whole buffer) into equal shards.
double reduceScatterSeconds(const ClusterModel &model, double bytes);

/// The runtime's agreement before every synchronous call (one all-reduce
/// of 58 int64).
double agreementSeconds(const ClusterModel &model);

/// What one strategy costs one tensor per step.
struct Prediction {
  double seconds = 0;   // communication and kernels, not overlapped
  double bytesSent = 0; // per rank
};

/// The strategies, for a tensor of `elements` float32 values. Every
/// runtime call also joins the agreement (one all-reduce of 58 int64).
/// `valueBytes`: 2 for a bf16 or f16 tensor, whose values travel in 16 bits
/// (the dense and ScaleCom forms; the kernels still work in float32).
Prediction predictDense(const ClusterModel &model, int64_t elements,
                        int64_t valueBytes = 4);
/// `exactSelection`: the leader's exact top-k selection (about ten
/// input reads, docs/performance.md) instead of the chunk path's one pass.
Prediction predictScaleCom(const ClusterModel &model, int64_t elements,
                           int64_t ratio, bool exactSelection = false,
                           int64_t valueBytes = 4);
Prediction predictLocalTopk(const ClusterModel &model, int64_t elements,
                            int64_t ratio);
/// Sharded data parallelism: the dense reduce-scatter of the gradient, and
/// ScaleCom's step with the k values reduce-scattered instead of
/// all-reduced (the index broadcast unchanged).
Prediction predictReduceScatter(const ClusterModel &model, int64_t elements,
                                int64_t valueBytes = 4);
Prediction predictScaleComReduceScatter(const ClusterModel &model,
                                        int64_t elements, int64_t ratio,
                                        bool exactSelection = false,
                                        int64_t valueBytes = 4);
Prediction predictGossip(const ClusterModel &model, int64_t elements);
Prediction predictEasgd(const ClusterModel &model, int64_t elements,
                        int64_t period);

/// policy=auto's choice for one tensor: dense (ratio 0) or ScaleCom at one
/// of the candidate ratios.
struct CompressionChoice {
  int64_t ratio = 0;
  Prediction chosen;
  Prediction dense;
  /// Every candidate's prediction, in the order of `ratios`.
  SmallVector<Prediction> candidates;
};

/// The fastest of dense and ScaleCom at each of `ratios`, except that the
/// least compressed candidate within `tolerance` (a fraction) of the
/// fastest time wins: compression costs accuracy, so it must buy time.
/// `sharded`: the reduce-scatter forms (a gradient shard.reduce_scatter);
/// `valueBytes` as for predictDense.
CompressionChoice chooseCompression(const ClusterModel &model, int64_t elements,
                                    ArrayRef<int64_t> ratios, double tolerance,
                                    bool exactSelection = false,
                                    bool sharded = false,
                                    int64_t valueBytes = 4);

} // namespace mlir::gradcomm

#endif // GRADCOMM_ANALYSIS_COSTMODEL_H
