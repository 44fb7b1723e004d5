// The AVX-512F code of unpool_transposed.h: the pooled gradient and its argmax offsets read as
// 16 channels x 16 pooled outputs, transposed in registers, each window stored as four
// 16-channel vectors. Moves and selects only: the floats are the portable code's.
#include <cstdint>

#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/pool/unpool_transposed.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
// GCC 12's unmasked shuffle intrinsics pass _mm512_undefined_ps() as their merge source, which
// -Wmaybe-uninitialized reports inside the header (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backend/cpu/pool/unpool_transposed_blocks.h"

namespace ra::backend::cpu::unpool_detail {
namespace {

constexpr int kBlock = 16;  // floats per vector: channels per block and pooled outputs per block

// r[i] lane j -> r[j] lane i. Pairs, then quads within 128-bit lanes; then two rounds of 128-bit
// lane shuffles gather the four quads of each column.
inline void transpose_16x16(__m512 (&r)[kBlock]) {
  __m512 t[kBlock];
  for (int i = 0; i < kBlock; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4 * group + k]: rows 4 group .. 4 group + 3 of columns k, k + 4, k + 8, k + 12 (one per
  // 128-bit lane).
  __m512 u[kBlock];
  for (int i = 0; i < kBlock; i += 4) {
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    // Lanes 0 and 2 (even) or 1 and 3 (odd) of groups 0, 1 and of groups 2, 3.
    const __m512 even01 = _mm512_shuffle_f32x4(u[k], u[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 odd01 = _mm512_shuffle_f32x4(u[k], u[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 even23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 odd23 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], _MM_SHUFFLE(3, 1, 3, 1));
    r[k] = _mm512_shuffle_f32x4(even01, even23, _MM_SHUFFLE(2, 0, 2, 0));
    r[k + 8] = _mm512_shuffle_f32x4(even01, even23, _MM_SHUFFLE(3, 1, 3, 1));
    r[k + 4] = _mm512_shuffle_f32x4(odd01, odd23, _MM_SHUFFLE(2, 0, 2, 0));
    r[k + 12] = _mm512_shuffle_f32x4(odd01, odd23, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// The AVX-512 block (unpool_transposed_blocks.h).
struct Avx512Block {
  static constexpr int kWidth = kBlock;

  static bool unpool(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                     std::int64_t c0, std::int64_t j0, const std::int32_t* corner, float* dy_t,
                     std::int64_t stride) {
    const std::int64_t W = g.w, plane = plane_size(g), pooled = pooled_size(g);
    const __m512 zero = _mm512_setzero_ps();
    const __m512i offsets[4] = {_mm512_setzero_si512(), _mm512_set1_epi32(1),
                                _mm512_set1_epi32(static_cast<std::int32_t>(W)),
                                _mm512_set1_epi32(static_cast<std::int32_t>(W + 1))};
    const __m512i corners = _mm512_loadu_si512(corner);
    __m512 value[kBlock], offset[kBlock];
    __mmask16 outside = 0;
    for (int t = 0; t < kBlock; ++t) {
      const std::int64_t first_plane = n * g.c + c0 + t;
      const std::int64_t i = first_plane * pooled + j0;
      __m512 v = _mm512_loadu_ps(gradient.dy + i);
      if (gradient.relu_gate != nullptr) {  // relu_backward: dy where the gate > 0, else +0
        const __m512 gate = _mm512_loadu_ps(gradient.relu_gate + i);
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(gate, zero, _CMP_GT_OQ), v);
      }
      value[t] = _mm512_add_ps(zero, v);
      const __m512i o = _mm512_sub_epi32(
          _mm512_loadu_si512(gradient.argmax + i),
          _mm512_add_epi32(_mm512_set1_epi32(static_cast<std::int32_t>(first_plane * plane)),
                           corners));
      const __mmask16 inside =
          _mm512_cmpeq_epi32_mask(o, offsets[0]) | _mm512_cmpeq_epi32_mask(o, offsets[1]) |
          _mm512_cmpeq_epi32_mask(o, offsets[2]) | _mm512_cmpeq_epi32_mask(o, offsets[3]);
      outside |= static_cast<__mmask16>(~inside);
      offset[t] = _mm512_castsi512_ps(o);
    }
    if (outside != 0) return false;
    transpose_16x16(value);
    transpose_16x16(offset);
    for (int jj = 0; jj < kBlock; ++jj) {
      float* top = dy_t + std::int64_t(corner[jj]) * stride + c0;
      float* bottom = top + W * stride;
      const __m512i o = _mm512_castps_si512(offset[jj]);
      const __m512 v = value[jj];
      const auto pick = [&](int k) {
        return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(o, offsets[k]), v);
      };
      _mm512_storeu_ps(top, pick(0));
      _mm512_storeu_ps(top + stride, pick(1));
      _mm512_storeu_ps(bottom, pick(2));
      _mm512_storeu_ps(bottom + stride, pick(3));
    }
    return true;
  }
};

}  // namespace

void unpool_image_transposed_avx512(const PoolGeometry& g, const MaxPoolGradient& gradient,
                                    std::int64_t n, float* dy_t, std::int64_t stride) {
  unpool_image_in_blocks<Avx512Block>(g, gradient, n, dy_t, stride);
}

void add_column_plane_sums_avx512(const float* rows, std::int64_t count, std::int64_t stride,
                                  std::int64_t channels, float* sums) {
  const std::int64_t whole_channels = channels / kBlock * kBlock;
  const std::int64_t whole = count - count % 8;
  for (std::int64_t c0 = 0; c0 < whole_channels; c0 += kBlock) {
    __m512 lanes[8];
    for (__m512& lane : lanes) lane = _mm512_setzero_ps();
    const float* column = rows + c0;
    for (std::int64_t j = 0; j < whole; j += 8) {
      for (int l = 0; l < 8; ++l) {
        lanes[l] = _mm512_add_ps(lanes[l], _mm512_loadu_ps(column + (j + l) * stride));
      }
    }
    for (std::int64_t j = whole; j < count; ++j) {
      lanes[j - whole] = _mm512_add_ps(lanes[j - whole], _mm512_loadu_ps(column + j * stride));
    }
    // plane_sum_tree's order (reduction.h), written out: that template is defined outside this
    // unit's target region, so an instantiation of it would not be AVX-512 code.
    const __m512 tree = _mm512_add_ps(
        _mm512_add_ps(_mm512_add_ps(lanes[0], lanes[4]), _mm512_add_ps(lanes[2], lanes[6])),
        _mm512_add_ps(_mm512_add_ps(lanes[1], lanes[5]), _mm512_add_ps(lanes[3], lanes[7])));
    _mm512_storeu_ps(sums + c0, _mm512_add_ps(_mm512_loadu_ps(sums + c0), tree));
  }
  add_column_plane_sums_portable(rows, count, stride, whole_channels, channels, sums);
}

}  // namespace ra::backend::cpu::unpool_detail
#pragma GCC diagnostic pop
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ra::backend::cpu::unpool_detail {
void unpool_image_transposed_avx512(const PoolGeometry&, const MaxPoolGradient&, std::int64_t,
                                    float*, std::int64_t) {
  throw RuntimeFailure("the avx512-fma unpooling exists only in x86 builds");
}
void add_column_plane_sums_avx512(const float*, std::int64_t, std::int64_t, std::int64_t, float*) {
  throw RuntimeFailure("the avx512-fma unpooling exists only in x86 builds");
}
}  // namespace ra::backend::cpu::unpool_detail

#endif
