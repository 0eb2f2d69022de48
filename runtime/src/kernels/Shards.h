//===- Shards.h - How a buffer is cut into shards ---------------*- C++ -*-===//
//
// Part of the GradComm project.
//
// The one rule every reduce-scatter follows (gradcomm_shard_range): shard r
// of `count` elements over `size` ranks; the first count mod size shards
// hold one element more. Shared by the runtime's ops and the CUDA backend's
// library, which links nothing else of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_RUNTIME_KERNELS_SHARDS_H
#define GRADCOMM_RUNTIME_KERNELS_SHARDS_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gradcomm {

/// Where shard `rank` begins (`rank` = size: the end). No product of count
/// and size, so no overflow up to 2^62 elements.
inline int64_t shardBegin(int64_t count, int rank, int size) {
  const int64_t base = count / size, longer = count % size;
  return rank * base + std::min<int64_t>(rank, longer);
}

/// Where each shard begins (size + 1 bounds).
inline std::vector<int64_t> shardBounds(int64_t count, int size) {
  std::vector<int64_t> bounds(size + 1);
  for (int r = 0; r <= size; ++r)
    bounds[r] = shardBegin(count, r, size);
  return bounds;
}

} // namespace gradcomm

#endif // GRADCOMM_RUNTIME_KERNELS_SHARDS_H
