//===- CostModel.cpp - Predicted communication time of GradComm ops -------===//
//
// Part of the GradComm project.
//
// docs/scaling.md: the formulas, their sources (MPICH's default algorithm
// choices) and what they leave out.
//
//===----------------------------------------------------------------------===//

#include "gradcomm/Analysis/CostModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::gradcomm;

namespace {

// MPICH's default thresholds between algorithms (MPIR_CVAR_*).
constexpr double kAllReduceShortBytes = 2048;
constexpr double kBroadcastShortBytes = 12288;
constexpr double kBroadcastLongBytes = 524288;
constexpr double kAllGatherLongBytes = 524288; // all ranks' data together
// The runtime's agreement before every collective call: 26 int64 of
// fields and flags and 32 of payload (ScaleCom's indices when they fit).
constexpr double kAgreementPayloadBytes = 32 * 8;
constexpr double kAgreementBytes = 26 * 8 + kAgreementPayloadBytes;
// Memory traffic of the kernels per element (bench/cpu, docs/performance.md):
// the fused memory update reads m, g and marks and writes m and the output;
// exact selection costs 8-13 input reads; a mix reads two vectors and
// writes one; the elastic update reads x and the center and writes both.
constexpr double kScaleComKernelBytes = 20;
constexpr double kLocalTopkKernelBytes = 20 + 4 * 12;
constexpr double kGossipKernelBytes = 12;
constexpr double kEasgdKernelBytes = 16;
// The exact selection on the leader: about ten reads of the 4 B input
// (8-13 input-read equivalents in bench/cpu at 16M-256M elements).
constexpr double kExactSelectionBytes = 40;

double ceilLog2(int64_t n) {
  return n <= 1 ? 0 : std::ceil(std::log2(static_cast<double>(n)));
}

/// int32 indices below 2^31 elements on the CPU backend.
double indexBytes(int64_t elements) {
  return elements < (int64_t(1) << 31) ? 4 : 8;
}

double secondsPerByte(const ClusterModel &model) {
  return 1.0 / model.linkBytesPerSecond;
}

/// A binomial tree or recursive doubling: ceil(log2 n) rounds of one
/// message of `bytes`.
double treeSeconds(const ClusterModel &model, double bytes) {
  return ceilLog2(model.ranks) *
         (model.latencySeconds + bytes * secondsPerByte(model));
}

double kernelSeconds(const ClusterModel &model, int64_t elements,
                     double bytesPerElement, double measuredPerElement = 0) {
  if (measuredPerElement > 0)
    return measuredPerElement * static_cast<double>(elements);
  return bytesPerElement * static_cast<double>(elements) /
         model.memoryBytesPerSecond;
}

/// Bytes one rank sends in an all-reduce of `bytes`.
double allReduceBytesSent(const ClusterModel &model, double bytes) {
  const int64_t n = model.ranks;
  if (n <= 1)
    return 0;
  if (bytes <= kAllReduceShortBytes)
    return ceilLog2(n) * bytes;
  return 2.0 * (n - 1) / n * bytes;
}

Prediction withAgreement(const ClusterModel &model, Prediction p) {
  p.seconds += allReduceSeconds(model, kAgreementBytes);
  p.bytesSent += allReduceBytesSent(model, kAgreementBytes);
  return p;
}

int64_t selected(int64_t elements, int64_t ratio) {
  return std::max<int64_t>(1, (elements + ratio - 1) / ratio);
}

llvm::Error badValue(StringRef what, StringRef text, StringRef expected) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::formatv("bad {0} '{1}': expected {2}", what, text, expected));
}

} // namespace

llvm::Expected<double> mlir::gradcomm::parseBandwidth(StringRef text) {
  const StringRef original = text;
  text = text.trim();
  text.consume_back("/s");
  struct Unit {
    StringRef suffix;
    double bytesPerSecond;
  };
  // Longest suffixes first, so that "Gbit" is not read as "bit".
  const Unit units[] = {{"Gbit", 1e9 / 8}, {"Mbit", 1e6 / 8}, {"kbit", 1e3 / 8},
                        {"GB", 1e9},       {"MB", 1e6},       {"kB", 1e3},
                        {"bit", 1.0 / 8},  {"B", 1}};
  double scale = 1;
  for (const Unit &unit : units)
    if (text.consume_back(unit.suffix)) {
      scale = unit.bytesPerSecond;
      break;
    }
  double value = 0;
  if (text.trim().getAsDouble(value) || !(value > 0) || !std::isfinite(value))
    return badValue("bandwidth", original,
                    "a positive number with Gbit, Mbit, kbit, GB, MB, kB, "
                    "bit or B (per second), e.g. 10Gbit");
  return value * scale;
}

llvm::Expected<double> mlir::gradcomm::parseDuration(StringRef text) {
  const StringRef original = text;
  text = text.trim();
  double scale = 1;
  if (text.consume_back("us"))
    scale = 1e-6;
  else if (text.consume_back("ns"))
    scale = 1e-9;
  else if (text.consume_back("ms"))
    scale = 1e-3;
  else
    text.consume_back("s");
  double value = 0;
  if (text.trim().getAsDouble(value) || value < 0 || !std::isfinite(value))
    return badValue("latency", original,
                    "a non-negative number with ns, us, ms or s, e.g. 5us");
  return value * scale;
}

llvm::Error mlir::gradcomm::applyCalibration(StringRef text,
                                             ClusterModel &model) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [index, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.split('#').first.trim();
    if (line.empty())
      continue;
    auto [key, value] = line.split('=');
    key = key.trim();
    value = value.trim();
    auto where = [&, index = index](llvm::Error error) {
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("line {0}: {1}", index + 1,
                        llvm::toString(std::move(error))));
    };
    if (key == "ranks") {
      int64_t ranks = 0;
      if (value.getAsInteger(10, ranks) || ranks < 1)
        return where(badValue("ranks", value, "a positive integer"));
      model.ranks = ranks;
    } else if (key == "latency") {
      llvm::Expected<double> seconds = parseDuration(value);
      if (!seconds)
        return where(seconds.takeError());
      model.latencySeconds = *seconds;
    } else if (key == "bandwidth" || key == "memory_bandwidth") {
      llvm::Expected<double> rate = parseBandwidth(value);
      if (!rate)
        return where(rate.takeError());
      (key == "bandwidth" ? model.linkBytesPerSecond
                          : model.memoryBytesPerSecond) = *rate;
    } else if (double *field =
                   key == "kernel_scalecom_chunk"
                       ? &model.kernelSecondsPerElement.scalecomChunk
                   : key == "kernel_scalecom_exact"
                       ? &model.kernelSecondsPerElement.scalecomExact
                   : key == "kernel_local_topk"
                       ? &model.kernelSecondsPerElement.localTopk
                       : nullptr) {
      llvm::Expected<double> seconds = parseDuration(value);
      if (!seconds) {
        llvm::consumeError(seconds.takeError());
        return where(badValue(key, value,
                              "a time per element with ns, us, ms or s, "
                              "e.g. 2.1ns"));
      }
      *field = *seconds;
    } else {
      return where(badValue("key", key,
                            "ranks, latency, bandwidth, memory_bandwidth, "
                            "kernel_scalecom_chunk, kernel_scalecom_exact or "
                            "kernel_local_topk"));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<ClusterModel>
mlir::gradcomm::buildClusterModel(const ClusterSpec &spec) {
  ClusterModel model;
  if (!spec.calibrationFile.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(spec.calibrationFile, /*IsText=*/true);
    if (!file)
      return llvm::createStringError(
          file.getError(),
          llvm::formatv("cannot read calibration file '{0}': "
                        "{1}",
                        spec.calibrationFile, file.getError().message()));
    if (llvm::Error bad = applyCalibration((*file)->getBuffer(), model))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: {1}", spec.calibrationFile,
                        llvm::toString(std::move(bad))));
  }
  if (spec.ranks < 0)
    return badValue("ranks", std::to_string(spec.ranks), "a positive integer");
  if (spec.ranks > 0)
    model.ranks = spec.ranks;
  // Each quantity, when given, parsed into its field.
  struct Quantity {
    const std::string &text;
    llvm::Expected<double> (*parse)(StringRef);
    double &field;
  } quantities[] = {
      {spec.bandwidth, parseBandwidth, model.linkBytesPerSecond},
      {spec.latency, parseDuration, model.latencySeconds},
      {spec.memoryBandwidth, parseBandwidth, model.memoryBytesPerSecond}};
  for (Quantity &quantity : quantities) {
    if (quantity.text.empty())
      continue;
    llvm::Expected<double> value = quantity.parse(quantity.text);
    if (!value)
      return value.takeError();
    quantity.field = *value;
  }
  return model;
}

double mlir::gradcomm::allReduceSeconds(const ClusterModel &model,
                                        double bytes) {
  const int64_t n = model.ranks;
  if (n <= 1)
    return 0;
  const double alpha = model.latencySeconds, beta = secondsPerByte(model);
  if (bytes <= kAllReduceShortBytes) // recursive doubling
    return treeSeconds(model, bytes);
  // Rabenseifner: reduce-scatter, then all-gather.
  return 2 * ceilLog2(n) * alpha + 2.0 * (n - 1) / n * bytes * beta;
}

double mlir::gradcomm::broadcastSeconds(const ClusterModel &model,
                                        double bytes) {
  const int64_t n = model.ranks;
  if (n <= 1)
    return 0;
  const double alpha = model.latencySeconds, beta = secondsPerByte(model);
  if (bytes < kBroadcastShortBytes || n < 8) // binomial tree
    return treeSeconds(model, bytes);
  const double scatterAllGather = 2.0 * (n - 1) / n * bytes * beta;
  if (bytes < kBroadcastLongBytes) // scatter + recursive-doubling all-gather
    return 2 * ceilLog2(n) * alpha + scatterAllGather;
  // scatter + ring all-gather
  return (ceilLog2(n) + n - 1) * alpha + scatterAllGather;
}

double mlir::gradcomm::allGatherSeconds(const ClusterModel &model,
                                        double bytesPerRank) {
  const int64_t n = model.ranks;
  if (n <= 1)
    return 0;
  const double alpha = model.latencySeconds, beta = secondsPerByte(model);
  const double received = (n - 1) * bytesPerRank * beta;
  if (bytesPerRank * n < kAllGatherLongBytes) // recursive doubling
    return ceilLog2(n) * alpha + received;
  return (n - 1) * alpha + received; // ring
}

double mlir::gradcomm::sendRecvSeconds(const ClusterModel &model,
                                       double bytes) {
  if (model.ranks <= 1)
    return 0;
  return model.latencySeconds + bytes * secondsPerByte(model);
}

double mlir::gradcomm::reduceScatterSeconds(const ClusterModel &model,
                                            double bytes) {
  const int64_t n = model.ranks;
  if (n <= 1)
    return 0;
  // Recursive halving (MPICH's choice for commutative sums): log2 n rounds,
  // each rank sends (n - 1) / n of the buffer in all.
  return ceilLog2(n) * model.latencySeconds +
         (n - 1.0) / n * bytes * secondsPerByte(model);
}

double mlir::gradcomm::agreementSeconds(const ClusterModel &model) {
  return allReduceSeconds(model, kAgreementBytes);
}

Prediction mlir::gradcomm::predictDense(const ClusterModel &model,
                                        int64_t elements, int64_t valueBytes) {
  const double bytes = static_cast<double>(valueBytes) * elements;
  return withAgreement(model, {allReduceSeconds(model, bytes),
                               allReduceBytesSent(model, bytes)});
}

namespace {

/// ScaleCom's step with its values summed by `valueReduction` (an
/// all-reduce, or a reduce-scatter when sharded).
Prediction predictCompressedStep(const ClusterModel &model, int64_t elements,
                                 int64_t ratio, bool exactSelection,
                                 bool sharded, int64_t valueBytes) {
  const int64_t n = model.ranks;
  const double k = static_cast<double>(selected(elements, ratio));
  // Chunk selection (chunks of `ratio` elements) sends each index's offset
  // inside its chunk: 1 byte for chunks of up to 256, 2 up to 65536.
  const double width = exactSelection   ? indexBytes(elements)
                       : ratio <= 256   ? 1
                       : ratio <= 65536 ? 2
                                        : indexBytes(elements);
  double indices = k * width;
  // An exact selection travels as 16-bit gaps when that is smaller: k
  // words plus room for (elements - k) / 65535 escaped gaps of 2 words
  // (the runtime's smallestIndexCoding, src/kernels/IndexCoding.h).
  if (exactSelection && elements <= (int64_t(1) << 31)) {
    const double escapes =
        static_cast<double>((elements - static_cast<int64_t>(k)) / 65535);
    indices = std::min(indices, 2.0 * (k + 2.0 * escapes));
  }
  const double values = static_cast<double>(valueBytes) * k;
  Prediction p;
  // Indices that fit in the agreement's payload travel in it: no
  // broadcast of their own.
  const bool folded = indices <= kAgreementPayloadBytes;
  const double valueSeconds = sharded ? reduceScatterSeconds(model, values)
                                      : allReduceSeconds(model, values);
  const double valueBytesSent = sharded ? (n > 1 ? values * (n - 1) / n : 0)
                                        : allReduceBytesSent(model, values);
  p.seconds =
      (folded ? 0.0 : broadcastSeconds(model, indices)) + valueSeconds +
      kernelSeconds(
          model, elements,
          kScaleComKernelBytes + (exactSelection ? kExactSelectionBytes : 0),
          exactSelection ? model.kernelSecondsPerElement.scalecomExact
                         : model.kernelSecondsPerElement.scalecomChunk);
  p.bytesSent = (n > 1 ? indices * (n - 1) / n : 0) + valueBytesSent;
  return withAgreement(model, p);
}

} // namespace

Prediction mlir::gradcomm::predictScaleCom(const ClusterModel &model,
                                           int64_t elements, int64_t ratio,
                                           bool exactSelection,
                                           int64_t valueBytes) {
  return predictCompressedStep(model, elements, ratio, exactSelection,
                               /*sharded=*/false, valueBytes);
}

Prediction mlir::gradcomm::predictReduceScatter(const ClusterModel &model,
                                                int64_t elements,
                                                int64_t valueBytes) {
  const double bytes = static_cast<double>(valueBytes) * elements;
  const int64_t n = model.ranks;
  return withAgreement(model, {reduceScatterSeconds(model, bytes),
                               n > 1 ? bytes * (n - 1) / n : 0});
}

Prediction mlir::gradcomm::predictScaleComReduceScatter(
    const ClusterModel &model, int64_t elements, int64_t ratio,
    bool exactSelection, int64_t valueBytes) {
  return predictCompressedStep(model, elements, ratio, exactSelection,
                               /*sharded=*/true, valueBytes);
}

Prediction mlir::gradcomm::predictLocalTopk(const ClusterModel &model,
                                            int64_t elements, int64_t ratio) {
  const int64_t n = model.ranks;
  const double block = selected(elements, ratio) * (4.0 + 8.0);
  Prediction p;
  p.seconds = allGatherSeconds(model, block) +
              kernelSeconds(model, elements, kLocalTopkKernelBytes,
                            model.kernelSecondsPerElement.localTopk);
  p.bytesSent = (n - 1) * block;
  return withAgreement(model, p);
}

Prediction mlir::gradcomm::predictGossip(const ClusterModel &model,
                                         int64_t elements) {
  const double bytes = 4.0 * elements;
  Prediction p;
  p.seconds = sendRecvSeconds(model, bytes) +
              kernelSeconds(model, elements, kGossipKernelBytes);
  p.bytesSent = model.ranks > 1 ? bytes : 0;
  return withAgreement(model, p);
}

Prediction mlir::gradcomm::predictEasgd(const ClusterModel &model,
                                        int64_t elements, int64_t period) {
  const double bytes = 4.0 * elements,
               every = 1.0 / std::max<int64_t>(period, 1);
  Prediction p;
  p.seconds = every * (allReduceSeconds(model, bytes) +
                       kernelSeconds(model, elements, kEasgdKernelBytes));
  p.bytesSent = every * allReduceBytesSent(model, bytes);
  return withAgreement(model, p);
}

CompressionChoice mlir::gradcomm::chooseCompression(
    const ClusterModel &model, int64_t elements, ArrayRef<int64_t> ratios,
    double tolerance, bool exactSelection, bool sharded, int64_t valueBytes) {
  CompressionChoice choice;
  choice.dense = sharded ? predictReduceScatter(model, elements, valueBytes)
                         : predictDense(model, elements, valueBytes);
  double fastest = choice.dense.seconds;
  for (int64_t ratio : ratios) {
    choice.candidates.push_back(predictCompressedStep(
        model, elements, ratio, exactSelection, sharded, valueBytes));
    fastest = std::min(fastest, choice.candidates.back().seconds);
  }
  const double goodEnough = fastest * (1 + tolerance);
  choice.chosen = choice.dense;
  if (choice.dense.seconds <= goodEnough)
    return choice;
  // The least compressed candidate that is good enough.
  int64_t best = -1;
  for (auto [index, ratio] : llvm::enumerate(ratios))
    if (choice.candidates[index].seconds <= goodEnough &&
        (best < 0 || ratio < ratios[best]))
      best = index;
  choice.ratio = ratios[best];
  choice.chosen = choice.candidates[best];
  return choice;
}
