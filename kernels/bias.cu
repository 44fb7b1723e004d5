// bias_add:      y[n,k,s] += bias[k] over y[n, k, spatial]; '+=', one writer per element.
// bias_backward: db[k] = sum_{n,s} dy[n,k,s]; '='.
//   deterministic: blockIdx -> channel k; thread t sums items j = t, t + 256, ... (j = n * spatial
//     + s, in increasing order), then block_sum's fixed tree. No atomics: bitwise repeatable.
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

__global__ void bias_backward_atomic_kernel(const float* dy, float* db, int k, int spatial,
                                            std::int64_t items, int slices) {
  __shared__ float scratch[detail::kThreads];
  const std::int64_t begin = slice_begin(items, slices, blockIdx.x);
  const std::int64_t end = slice_begin(items, slices, blockIdx.x + 1);
  for (int channel = blockIdx.y; channel < k; channel += gridDim.y) {
    float sum = 0.0f;
    for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      sum += item(dy, j, channel, k, spatial);
    }
    const float partial = detail::block_sum(sum, scratch);
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

std::size_t bias_backward_workspace_bytes(int, int, int) {
  return 0;
}

void bias_backward(cudaStream_t stream, const float* dy, float* db, int n, int k, int spatial,
                   bool deterministic, void*) {
  if (k <= 0) return;
  const std::int64_t items = std::int64_t(n) * spatial;
  if (items <= 0) {
    fill(stream, db, k, 0.0f);  // an empty sum
    return;
  }
  const unsigned channel_blocks =
      static_cast<unsigned>(k < kMaxChannelBlocks ? k : kMaxChannelBlocks);
  if (deterministic) {
    bias_backward_deterministic_kernel<<<channel_blocks, detail::kThreads, 0, stream>>>(
        dy, db, k, spatial, items);
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
