// bias_add:      y[n,k,s] += bias[k] over y[n, k, spatial]; '+=', one writer per element.
// bias_backward: db[k] = sum_{n,s} dy[n,k,s]; '='.
//   deterministic, one fixed slice (bias_fixed_slices(items) <= 1): blockIdx -> channel k; thread t
//     sums items j = t, t + 256, ... (j = n * spatial + s, in increasing order), then block_sum's
//     fixed tree. No atomics: bitwise repeatable.
//   deterministic, 2 or more fixed slices: pass 1, grid (slices, channels): block (s, channel)
//     sums slice s of its channel's items as the atomic kernel does (thread t: items begin + t,
//     + 256, ...; then block_sum) and stores the partial in partials[channel * slices + s]; pass
//     2: thread `channel` adds partials[channel * slices + 0 .. slices - 1] in order into db.
//     Slices come from the item count alone: bitwise repeatable on every run and device.
//   nondeterministic: db = 0; grid (slices, channels), slices = bias_atomic_slices(n * spatial)
//     (kernels/reduction_split.h: at least min(items, 8)): block (s, channel) sums the contiguous
//     slice s of its channel's items (thread t: items begin + t, + 256, ...; then block_sum) and
//     atomicAdds the partial (completion order). Every slice is non-empty, so every block adds a
//     real partial: with 3 or more the bits may vary from run to run.
#include <cstdint>

#include "kernels/bias.cuh"
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"
#include "kernels/reduction_split.h"

namespace ra::kernels {
namespace {

// gridDim.y (and the channel loop of the deterministic kernel) is capped at 65535 blocks;
// kernels loop over channels past that.
constexpr int kMaxChannelBlocks = 65535;

__global__ void bias_add_kernel(float* y, const float* bias, std::int64_t total, int k,
                                int spatial) {
  for (std::int64_t i = detail::grid_first(); i < total; i += detail::grid_stride()) {
    y[i] += bias[(i / spatial) % k];
  }
}

// Value of item j = image * spatial + s of channel `channel` in dy[n, k, spatial].
__device__ __forceinline__ float item(const float* dy, std::int64_t j, int channel, int k,
                                      int spatial) {
  const std::int64_t image = j / spatial, s = j % spatial;
  return dy[(image * k + channel) * spatial + s];
}

__global__ void bias_backward_deterministic_kernel(const float* dy, float* db, int k, int spatial,
                                                   std::int64_t items) {
  __shared__ float scratch[detail::kThreads];
  for (int channel = blockIdx.x; channel < k; channel += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < items; j += blockDim.x) {
      sum += item(dy, j, channel, k, spatial);
    }
    const float total = detail::block_sum(sum, scratch);
    if (threadIdx.x == 0) db[channel] = total;
    __syncthreads();  // scratch is reused by the next channel
  }
}

// Sums the contiguous slice blockIdx.x of `slices` of each channel's items (block_sum's tree).
__device__ __forceinline__ float slice_sum(const float* dy, int channel, int k, int spatial,
                                           std::int64_t items, int slices, float* scratch) {
  const std::int64_t begin = slice_begin(items, slices, blockIdx.x);
  const std::int64_t end = slice_begin(items, slices, blockIdx.x + 1);
  float sum = 0.0f;
  for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    sum += item(dy, j, channel, k, spatial);
  }
  return detail::block_sum(sum, scratch);
}

__global__ void bias_backward_partials_kernel(const float* dy, float* partials, int k, int spatial,
                                              std::int64_t items, int slices) {
  __shared__ float scratch[detail::kThreads];
  for (int channel = blockIdx.y; channel < k; channel += gridDim.y) {
    const float partial = slice_sum(dy, channel, k, spatial, items, slices, scratch);
    if (threadIdx.x == 0) partials[std::int64_t(channel) * slices + blockIdx.x] = partial;
    __syncthreads();  // scratch is reused by the next channel
  }
}

// db[channel] = partials[channel][0] + ... + partials[channel][slices - 1], left to right.
__global__ void bias_backward_sum_partials_kernel(const float* partials, float* db, int k,
                                                  int slices) {
  for (std::int64_t channel = detail::grid_first(); channel < k; channel += detail::grid_stride()) {
    const float* row = partials + channel * slices;
    float sum = row[0];
    for (int s = 1; s < slices; ++s) sum += row[s];
    db[channel] = sum;
  }
}

__global__ void bias_backward_atomic_kernel(const float* dy, float* db, int k, int spatial,
                                            std::int64_t items, int slices) {
  __shared__ float scratch[detail::kThreads];
  for (int channel = blockIdx.y; channel < k; channel += gridDim.y) {
    const float partial = slice_sum(dy, channel, k, spatial, items, slices, scratch);
    if (threadIdx.x == 0) atomicAdd(db + channel, partial);
    __syncthreads();
  }
}

}  // namespace

void bias_add(cudaStream_t stream, float* y, const float* bias, int n, int k, int spatial) {
  const std::int64_t total = std::int64_t(n) * k * spatial;
  if (total <= 0) return;
  bias_add_kernel<<<detail::grid_for(total), detail::kThreads, 0, stream>>>(y, bias, total, k,
                                                                            spatial);
}

std::size_t bias_backward_workspace_bytes(int n, int k, int spatial, bool deterministic) {
  const int slices = bias_fixed_slices(std::int64_t(n) * spatial);
  if (!deterministic || slices < 2 || k <= 0) return 0;
  return std::size_t(k) * std::size_t(slices) * sizeof(float);
}

void bias_backward(cudaStream_t stream, const float* dy, float* db, int n, int k, int spatial,
                   bool deterministic, void* workspace) {
  if (k <= 0) return;
  const std::int64_t items = std::int64_t(n) * spatial;
  if (items <= 0) {
    fill(stream, db, k, 0.0f);  // an empty sum
    return;
  }
  const unsigned channel_blocks =
      static_cast<unsigned>(k < kMaxChannelBlocks ? k : kMaxChannelBlocks);
  if (deterministic) {
    const int fixed = bias_fixed_slices(items);
    if (fixed < 2) {
      bias_backward_deterministic_kernel<<<channel_blocks, detail::kThreads, 0, stream>>>(
          dy, db, k, spatial, items);
      return;
    }
    // The same grid shape as the atomic path's; the partials replace its atomics.
    auto* partials = static_cast<float*>(workspace);
    const GridShape shape = bias_atomic_grid(k, fixed);
    const dim3 grid(static_cast<unsigned>(shape.x), static_cast<unsigned>(shape.y));
    bias_backward_partials_kernel<<<grid, detail::kThreads, 0, stream>>>(dy, partials, k, spatial,
                                                                         items, fixed);
    bias_backward_sum_partials_kernel<<<detail::grid_for(k), detail::kThreads, 0, stream>>>(
        partials, db, k, fixed);
    return;
  }
  fill(stream, db, k, 0.0f);
  const int slices = bias_atomic_slices(items);
  const GridShape shape = bias_atomic_grid(k, slices);
  const dim3 grid(static_cast<unsigned>(shape.x), static_cast<unsigned>(shape.y));
  bias_backward_atomic_kernel<<<grid, detail::kThreads, 0, stream>>>(dy, db, k, spatial, items,
                                                                     slices);
}

}  // namespace ra::kernels
