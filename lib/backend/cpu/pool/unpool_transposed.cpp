// The portable code of unpool_transposed.h (scalar loops, and SSE2 blocks on x86) and the dispatch
// to the AVX-512 unit.
#include "backend/cpu/pool/unpool_transposed.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backend/cpu/activation.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/pool/unpool_transposed_blocks.h"
#include "backend/cpu/reduce/reduction.h"

namespace ra::backend::cpu {
namespace unpool_detail {

void unpool_block_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                             std::int64_t c0, std::int64_t c1, std::int64_t j0, std::int64_t j1,
                             float* dy_t, std::int64_t stride) {
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
      const std::int64_t offset =
          std::int64_t(gradient.argmax[i]) - ((n * g.c + c) * plane + corner);
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

namespace {

// add_column_plane_sums for kChannels channels from c: constant indices, so the 8 x kChannels lane
// sums stay in registers and the compiler adds a row's channels as one vector (one channel at a
// time, with lanes[j % 8], the lanes are indexed at run time and live in memory: a scalar load, add
// and store per float).
template <int kChannels>
void add_column_plane_sums_of(const float* rows, std::int64_t count, std::int64_t stride,
                              std::int64_t c, float* sums) {
  const std::int64_t whole = count - count % 8;
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
    sums[c + t] +=
        plane_sum_tree([&](int l) { return lanes[l][t]; }, [](float a, float b) { return a + b; });
  }
}

}  // namespace

void add_column_plane_sums_portable(const float* rows, std::int64_t count, std::int64_t stride,
                                    std::int64_t c0, std::int64_t c1, float* sums) {
  constexpr int kChannels = 4;
  std::int64_t c = c0;
  for (; c + kChannels <= c1; c += kChannels) {
    add_column_plane_sums_of<kChannels>(rows, count, stride, c, sums);
  }
  for (; c < c1; ++c) add_column_plane_sums_of<1>(rows, count, stride, c, sums);
}

}  // namespace unpool_detail

namespace {

#if defined(__SSE2__)
// The baseline x86 block (unpool_transposed_blocks.h): 4 channels x 4 pooled outputs transposed in
// SSE registers (element by element, each float would be a scalar load and a strided store, as in
// simd/transpose.h). The scalar loop's operations, so its floats.
struct SseBlock {
  static constexpr int kWidth = 4;

  static bool unpool(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                     std::int64_t c0, std::int64_t j0, const std::int32_t* corner, float* dy_t,
                     std::int64_t stride) {
    const std::int64_t W = g.w, plane = plane_size(g), pooled = pooled_size(g);
    const __m128 zero = _mm_setzero_ps();
    const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1),
                                _mm_set1_epi32(static_cast<std::int32_t>(W)),
                                _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
    const __m128i corners = _mm_loadu_si128(reinterpret_cast<const __m128i*>(corner));
    __m128 value[kWidth], offset[kWidth];
    bool outside = false;
    for (int t = 0; t < kWidth; ++t) {
      const std::int64_t first_plane = n * g.c + c0 + t;
      const std::int64_t i = first_plane * pooled + j0;
      __m128 v = _mm_loadu_ps(gradient.dy + i);
      if (gradient.relu_gate != nullptr) {  // relu_backward: dy where the gate > 0, else +0
        v = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(gradient.relu_gate + i), zero), v);
      }
      value[t] = _mm_add_ps(zero, v);
      const __m128i o = _mm_sub_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(gradient.argmax + i)),
          _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(first_plane * plane)), corners));
      const __m128i inside = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi32(o, offsets[0]), _mm_cmpeq_epi32(o, offsets[1])),
          _mm_or_si128(_mm_cmpeq_epi32(o, offsets[2]), _mm_cmpeq_epi32(o, offsets[3])));
      outside = outside || _mm_movemask_epi8(inside) != 0xFFFF;
      offset[t] = _mm_castsi128_ps(o);
    }
    if (outside) return false;
    _MM_TRANSPOSE4_PS(value[0], value[1], value[2], value[3]);
    _MM_TRANSPOSE4_PS(offset[0], offset[1], offset[2], offset[3]);
    for (int jj = 0; jj < kWidth; ++jj) {
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
    return true;
  }
};
#endif

}  // namespace

void unpool_image_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                             float* dy_t, std::int64_t stride, Isa isa) {
  if (isa == Isa::avx512_fma) {
    unpool_detail::unpool_image_transposed_avx512(g, gradient, n, dy_t, stride);
    return;
  }
#if defined(__SSE2__)
  unpool_detail::unpool_image_in_blocks<SseBlock>(g, gradient, n, dy_t, stride);
#else
  unpool_detail::zero_uncovered_pixels(g, dy_t, stride);
  unpool_detail::unpool_block_transposed(g, gradient, n, 0, g.c, 0, pooled_size(g), dy_t, stride);
#endif
}

void add_column_plane_sums(const float* rows, std::int64_t count, std::int64_t stride,
                           std::int64_t channels, float* sums, Isa isa) {
  if (isa == Isa::avx512_fma) {
    unpool_detail::add_column_plane_sums_avx512(rows, count, stride, channels, sums);
    return;
  }
  if (isa == Isa::avx2_fma) {
    unpool_detail::add_column_plane_sums_avx2(rows, count, stride, channels, sums);
    return;
  }
  unpool_detail::add_column_plane_sums_portable(rows, count, stride, 0, channels, sums);
}

}  // namespace ra::backend::cpu
