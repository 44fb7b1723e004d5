// Global average pooling (global_avgpool.cuh): forward one thread per plane in the CPU's lane
// order, backward one thread per element.
#include "kernels/global_avgpool.cuh"
#include "kernels/launch_config.cuh"

namespace ra::kernels {
namespace {

constexpr int kLanes = 16;

__global__ void global_avgpool_forward_kernel(std::int64_t planes, std::int64_t spatial,
                                              const float* x, float* y) {
  const float count = static_cast<float>(spatial);
  for (std::int64_t plane = detail::grid_first(); plane < planes; plane += detail::grid_stride()) {
    const float* in = x + plane * spatial;
    float lanes[kLanes] = {};
    const std::int64_t whole = spatial - spatial % kLanes;
    for (std::int64_t j = 0; j < whole; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += in[j + l];
    }
    for (std::int64_t j = whole; j < spatial; ++j) lanes[j - whole] += in[j];
    for (int width = kLanes / 2; width >= 1; width /= 2) {
      for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
    }
    y[plane] = lanes[0] / count;
  }
}

__global__ void global_avgpool_backward_kernel(std::int64_t elements, std::int64_t spatial,
                                               const float* dy, float* dx) {
  const float count = static_cast<float>(spatial);
  for (std::int64_t i = detail::grid_first(); i < elements; i += detail::grid_stride()) {
    dx[i] = dy[i / spatial] / count;
  }
}

}  // namespace

void global_avgpool_forward(cudaStream_t stream, const ra::backend::ChannelGeometry& g,
                            const float* x, float* y) {
  const std::int64_t planes = g.planes();
  if (planes == 0 || g.spatial() == 0) return;
  global_avgpool_forward_kernel<<<detail::grid_for(planes), detail::kThreads, 0, stream>>>(
      planes, g.spatial(), x, y);
}

void global_avgpool_backward(cudaStream_t stream, const ra::backend::ChannelGeometry& g,
                             const float* dy, float* dx) {
  const std::int64_t elements = g.x_size();
  if (elements == 0) return;
  global_avgpool_backward_kernel<<<detail::grid_for(elements), detail::kThreads, 0, stream>>>(
      elements, g.spatial(), dy, dx);
}

}  // namespace ra::kernels
