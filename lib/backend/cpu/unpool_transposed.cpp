// The portable code of unpool_transposed.h and the dispatch to the AVX-512 unit.
#include "backend/cpu/unpool_transposed.h"

#include "backend/cpu/activation.h"
#include "backend/cpu/maxpool_2x2.h"

namespace ra::backend::cpu {
namespace unpool_detail {

void unpool_block_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient,
                             std::int64_t n, std::int64_t c0, std::int64_t c1, std::int64_t j0,
                             std::int64_t j1, float* dy_t, std::int64_t stride) {
  const std::int64_t W = g.w, plane = plane_size(g), pooled = pooled_size(g);
  for (std::int64_t j = j0; j < j1; ++j) {
    const std::int64_t corner = 2 * (j / g.q) * W + 2 * (j % g.q);
    float* top = dy_t + corner * stride;
    float* bottom = top + W * stride;
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t i = (n * g.c + c) * pooled + j;
      // unpool_plane_2x2's value: +0 + g turns a -0 into +0, as the add into a zeroed dx does.
      const float v = 0.0f + (gradient.relu_gate == nullptr
                                  ? gradient.dy[i]
                                  : relu_backward(gradient.relu_gate[i], gradient.dy[i]));
      const std::int64_t offset = std::int64_t(gradient.argmax[i]) - ((n * g.c + c) * plane + corner);
      if (offset != 0 && offset != 1 && offset != W && offset != W + 1) {
        throw_bad_argmax(i, gradient.argmax[i]);
      }
      top[c] = offset == 0 ? v : 0.0f;
      top[stride + c] = offset == 1 ? v : 0.0f;
      bottom[c] = offset == W ? v : 0.0f;
      bottom[stride + c] = offset == W + 1 ? v : 0.0f;
    }
  }
}

void zero_uncovered_pixels(const PoolGeometry& g, float* dy_t, std::int64_t stride) {
  for (std::int64_t row = 0; row < g.h; ++row) {
    const std::int64_t first = row < 2 * std::int64_t(g.p) ? 2 * std::int64_t(g.q) : 0;
    for (std::int64_t col = first; col < g.w; ++col) {
      float* lanes = dy_t + (row * g.w + col) * stride;
      for (std::int64_t c = 0; c < g.c; ++c) lanes[c] = 0.0f;
    }
  }
}

void add_column_plane_sums_portable(const float* rows, std::int64_t count, std::int64_t stride,
                                    std::int64_t c0, std::int64_t c1, float* sums) {
  for (std::int64_t c = c0; c < c1; ++c) {
    float lanes[8] = {};
    for (std::int64_t j = 0; j < count; ++j) lanes[j % 8] += rows[j * stride + c];
    sums[c] += ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
               ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  }
}

}  // namespace unpool_detail

void unpool_image_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient,
                             std::int64_t n, float* dy_t, std::int64_t stride, GemmKernel kernel) {
  if (kernel == GemmKernel::avx512_fma) {
    unpool_detail::unpool_image_transposed_avx512(g, gradient, n, dy_t, stride);
    return;
  }
  unpool_detail::zero_uncovered_pixels(g, dy_t, stride);
  unpool_detail::unpool_block_transposed(g, gradient, n, 0, g.c, 0, pooled_size(g), dy_t, stride);
}

void add_column_plane_sums(const float* rows, std::int64_t count, std::int64_t stride,
                           std::int64_t channels, float* sums, GemmKernel kernel) {
  if (kernel == GemmKernel::avx512_fma) {
    unpool_detail::add_column_plane_sums_avx512(rows, count, stride, channels, sums);
    return;
  }
  unpool_detail::add_column_plane_sums_portable(rows, count, stride, 0, channels, sums);
}

}  // namespace ra::backend::cpu
