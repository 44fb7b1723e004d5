// Dropout: y[count], mask[count] from x[count] ('='), one writer per element: deterministic and
// bit-identical to the CPU (the same Philox words, an integer threshold, the one multiply
// x * scale). Each thread draws one Philox block (4 words) and handles elements 4b .. 4b+3, so a
// block of 10 rounds is computed once for 4 elements, as on the CPU.
#include "kernels/dropout.cuh"
#include "kernels/launch_config.cuh"

namespace ra::kernels {
namespace {

// The draw as launched (a value) or as read from device memory when the kernel runs.
__device__ std::uint64_t draw_of(std::uint64_t draw) {
  return draw;
}
__device__ std::uint64_t draw_of(DeviceValue<std::uint64_t> draw) {
  return *draw.at;
}

template <class Draw>
__global__ void dropout_forward_kernel(std::int64_t count, std::uint32_t drop_threshold,
                                       float scale, ra::rng::PhiloxKey key, Draw draw_arg,
                                       const float* x, float* y, std::uint8_t* mask) {
  const std::uint64_t draw = draw_of(draw_arg);
  const std::int64_t blocks = (count + 3) / 4;
  for (std::int64_t b = detail::grid_first(); b < blocks; b += detail::grid_stride()) {
    const ra::rng::PhiloxBlock bits =
        ra::rng::philox_block(key, static_cast<std::uint64_t>(b), draw);
    const std::int64_t first = b * 4;
    const int lanes = count - first < 4 ? static_cast<int>(count - first) : 4;
    for (int lane = 0; lane < lanes; ++lane) {
      const bool keep = (bits.v[lane] >> 8) >= drop_threshold;
      y[first + lane] = keep ? x[first + lane] * scale : 0.0f;
      mask[first + lane] = keep ? 1 : 0;
    }
  }
}

__global__ void dropout_backward_kernel(std::int64_t count, float scale, const std::uint8_t* mask,
                                        const float* dy, float* dx) {
  for (std::int64_t i = detail::grid_first(); i < count; i += detail::grid_stride()) {
    dx[i] = mask[i] != 0 ? dy[i] * scale : 0.0f;
  }
}

}  // namespace

void dropout_forward(cudaStream_t stream, std::int64_t count, std::uint32_t drop_threshold,
                     float scale, ra::rng::PhiloxKey key, std::uint64_t draw, const float* x,
                     float* y, std::uint8_t* mask) {
  if (count <= 0) return;
  dropout_forward_kernel<<<detail::grid_for((count + 3) / 4), detail::kThreads, 0, stream>>>(
      count, drop_threshold, scale, key, draw, x, y, mask);
}

void dropout_forward(cudaStream_t stream, std::int64_t count, std::uint32_t drop_threshold,
                     float scale, ra::rng::PhiloxKey key, DeviceValue<std::uint64_t> draw,
                     const float* x, float* y, std::uint8_t* mask) {
  if (count <= 0) return;
  dropout_forward_kernel<<<detail::grid_for((count + 3) / 4), detail::kThreads, 0, stream>>>(
      count, drop_threshold, scale, key, draw, x, y, mask);
}

void dropout_backward(cudaStream_t stream, std::int64_t count, float scale,
                      const std::uint8_t* mask, const float* dy, float* dx) {
  if (count <= 0) return;
  dropout_backward_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(count, scale,
                                                                                    mask, dy, dx);
}

}  // namespace ra::kernels
