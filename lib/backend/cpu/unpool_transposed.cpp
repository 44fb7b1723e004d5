// The portable code of unpool_transposed.h (scalar loops, and SSE2 blocks on x86) and the dispatch
// to the AVX-512 unit.
#include "backend/cpu/unpool_transposed.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  // Four channels at a time, eight rows per step: constant indices, so the 8 x 4 lane sums stay
  // in registers and the compiler adds a row's four channels as one vector (one channel at a
  // time, lanes[j % 8] made the 1-thread bias gradient of conv1 0.9 ms slower on AVX2).
  constexpr int kChannels = 4;
  const std::int64_t whole = count - count % 8;
  std::int64_t c = c0;
  for (; c + kChannels <= c1; c += kChannels) {
    float lanes[8][kChannels] = {};
    for (std::int64_t j = 0; j < whole; j += 8) {
      for (int l = 0; l < 8; ++l) {
        const float* row = rows + (j + l) * stride + c;
        for (int t = 0; t < kChannels; ++t) lanes[l][t] += row[t];
      }
    }
    for (std::int64_t j = whole; j < count; ++j) {
      const float* row = rows + j * stride + c;
      for (int t = 0; t < kChannels; ++t) lanes[j - whole][t] += row[t];
    }
    for (int t = 0; t < kChannels; ++t) {
      sums[c + t] += ((lanes[0][t] + lanes[4][t]) + (lanes[2][t] + lanes[6][t])) +
                     ((lanes[1][t] + lanes[5][t]) + (lanes[3][t] + lanes[7][t]));
    }
  }
  for (; c < c1; ++c) {
    float lanes[8] = {};
    for (std::int64_t j = 0; j < count; ++j) lanes[j % 8] += rows[j * stride + c];
    sums[c] += ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
               ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  }
}

}  // namespace unpool_detail

namespace {

#if defined(__SSE2__)
// The baseline x86 code: blocks of 4 channels x 4 pooled outputs transposed in SSE registers
// (one element at a time, the AVX2 machines' 1-thread MNIST step spent 6% of its time here),
// the edges by the scalar loops. The scalar loops' operations, so their floats.
void unpool_image_transposed_sse(const PoolGeometry& g, const MaxPoolGradient& gradient,
                                 std::int64_t n, float* dy_t, std::int64_t stride) {
  constexpr int kBlock = 4;
  const std::int64_t W = g.w, plane = plane_size(g), pooled = pooled_size(g);
  const std::int64_t whole_channels = g.c / kBlock * kBlock;
  const std::int64_t whole_outputs = pooled / kBlock * kBlock;
  unpool_detail::zero_uncovered_pixels(g, dy_t, stride);
  const __m128 zero = _mm_setzero_ps();
  const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1),
                              _mm_set1_epi32(static_cast<std::int32_t>(W)),
                              _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
  for (std::int64_t j0 = 0; j0 < whole_outputs; j0 += kBlock) {
    std::int32_t corner[kBlock];
    for (int jj = 0; jj < kBlock; ++jj) {
      const std::int64_t j = j0 + jj;
      corner[jj] = static_cast<std::int32_t>(2 * (j / g.q) * W + 2 * (j % g.q));
    }
    const __m128i corners = _mm_loadu_si128(reinterpret_cast<const __m128i*>(corner));
    for (std::int64_t c0 = 0; c0 < whole_channels; c0 += kBlock) {
      __m128 value[kBlock], offset[kBlock];
      bool outside = false;
      for (int t = 0; t < kBlock; ++t) {
        const std::int64_t first_plane = n * g.c + c0 + t;
        const std::int64_t i = first_plane * pooled + j0;
        __m128 v = _mm_loadu_ps(gradient.dy + i);
        if (gradient.relu_gate != nullptr) {  // relu_backward: dy where the gate > 0, else +0
          v = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(gradient.relu_gate + i), zero), v);
        }
        value[t] = _mm_add_ps(zero, v);
        const __m128i o = _mm_sub_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(gradient.argmax + i)),
            _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(first_plane * plane)),
                          corners));
        const __m128i inside =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi32(o, offsets[0]), _mm_cmpeq_epi32(o, offsets[1])),
                         _mm_or_si128(_mm_cmpeq_epi32(o, offsets[2]), _mm_cmpeq_epi32(o, offsets[3])));
        outside = outside || _mm_movemask_epi8(inside) != 0xFFFF;
        offset[t] = _mm_castsi128_ps(o);
      }
      if (outside) {  // the scalar loop names the first bad argmax and throws
        unpool_detail::unpool_block_transposed(g, gradient, n, c0, c0 + kBlock, j0, j0 + kBlock,
                                               dy_t, stride);
        continue;
      }
      _MM_TRANSPOSE4_PS(value[0], value[1], value[2], value[3]);
      _MM_TRANSPOSE4_PS(offset[0], offset[1], offset[2], offset[3]);
      for (int jj = 0; jj < kBlock; ++jj) {
        float* top = dy_t + std::int64_t(corner[jj]) * stride + c0;
        float* bottom = top + W * stride;
        const __m128i o = _mm_castps_si128(offset[jj]);
        const __m128 v = value[jj];
        const auto pick = [&](int k) {
          return _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(o, offsets[k])), v);
        };
        _mm_storeu_ps(top, pick(0));
        _mm_storeu_ps(top + stride, pick(1));
        _mm_storeu_ps(bottom, pick(2));
        _mm_storeu_ps(bottom + stride, pick(3));
      }
    }
    if (whole_channels < g.c) {
      unpool_detail::unpool_block_transposed(g, gradient, n, whole_channels, g.c, j0, j0 + kBlock,
                                             dy_t, stride);
    }
  }
  if (whole_outputs < pooled) {
    unpool_detail::unpool_block_transposed(g, gradient, n, 0, g.c, whole_outputs, pooled, dy_t,
                                           stride);
  }
}
#endif

}  // namespace

void unpool_image_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient,
                             std::int64_t n, float* dy_t, std::int64_t stride, GemmKernel kernel) {
  if (kernel == GemmKernel::avx512_fma) {
    unpool_detail::unpool_image_transposed_avx512(g, gradient, n, dy_t, stride);
    return;
  }
#if defined(__SSE2__)
  unpool_image_transposed_sse(g, gradient, n, dy_t, stride);
#else
  unpool_detail::zero_uncovered_pixels(g, dy_t, stride);
  unpool_detail::unpool_block_transposed(g, gradient, n, 0, g.c, 0, pooled_size(g), dy_t, stride);
#endif
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
