#pragma once
// Launch shapes shared by the kernels of this folder (internal: not included outside kernels/).
//
// Every kernel runs 256-thread blocks over a grid-stride loop. The grid size is a function of the
// element count only, never of the device (SM count, occupancy): the deterministic reductions
// below fix their tree by grid size, so it must not change between machines.
#include <cstdint>

#include "core/integer_math.h"

namespace ra::kernels::detail {

inline constexpr int kThreads = 256;

// At most 4096 blocks: 4096 x 256 = 1,048,576 threads, about 4 resident waves on an H100
// (132 SMs x 2048 threads = 270,336); larger counts loop inside each thread.
inline constexpr std::int64_t kMaxBlocks = 4096;

// Blocks for one element per thread, capped at kMaxBlocks; count must be positive.
inline unsigned grid_for(std::int64_t count) {
  const std::int64_t blocks = ra::ceil_div(count, kThreads);
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// First index and stride of a grid-stride loop, in 64 bits: counts may exceed 2^31.
__device__ __forceinline__ std::int64_t grid_first() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() {
  return static_cast<std::int64_t>(blockDim.x) * gridDim.x;
}

// The sum of v over the kThreads threads of a block, by a fixed tree: slot t adds slot
// t + width for width = 128, 64, ..., 1. The same inputs give the same bits on every run.
// Every thread of the block must call it; the result is valid in thread 0 only. `scratch` is
// __shared__ memory of kThreads floats, free for reuse after the call.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) scratch[threadIdx.x] += scratch[threadIdx.x + width];
    __syncthreads();
  }
  return scratch[0];
}

}  // namespace ra::kernels::detail
