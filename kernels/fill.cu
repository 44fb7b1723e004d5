// fill: x[count] = value ('='), one writer per element, grid-stride, 256-thread blocks.
#include "kernels/fill.cuh"
#include "kernels/launch_config.cuh"

namespace ra::kernels {
namespace {

__global__ void fill_kernel(float* x, std::int64_t count, float value) {
  for (std::int64_t i = detail::grid_first(); i < count; i += detail::grid_stride()) x[i] = value;
}

}  // namespace

void fill(cudaStream_t stream, float* x, std::int64_t count, float value) {
  if (count <= 0) return;  // a grid of 0 blocks is a launch error
  fill_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(x, count, value);
}

}  // namespace ra::kernels
