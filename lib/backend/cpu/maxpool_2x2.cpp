// The backward of the Keras max-pool (maxpool_2x2.h), shared by maxpool2d_backward and the conv
// backward that unpools its output gradient per image (conv2d_backward_maxpool).
#include <algorithm>
#include <string>
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backend/cpu/activation.h"
#include "backend/cpu/maxpool_2x2.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

std::int64_t plane_size(const PoolGeometry& g) {
  return std::int64_t(g.h) * g.w;
}
std::int64_t pooled_size(const PoolGeometry& g) {
  return std::int64_t(g.p) * g.q;
}

// The offset of output i's argmax in its 2x2 window, whose top-left element has flat index
// `corner`: 0, 1, W or W + 1; anything else is an argmax no 2x2/2 forward pass wrote.
std::int64_t offset_in_window(const std::int32_t* argmax, std::int64_t i, std::int64_t corner,
                              std::int64_t W) {
  const std::int64_t offset = std::int64_t(argmax[i]) - corner;
  if (offset != 0 && offset != 1 && offset != W && offset != W + 1) {
    throw_bad_argmax(i, argmax[i]);
  }
  return offset;
}

#if defined(__x86_64__)
// One row pair of unpool_plane_2x2 (below) with AVX-512: up to 16 outputs at a time (a masked
// last group: the Keras MNIST rows have 12), the picked values interleaved into the even and odd
// columns by one two-source permutation per 16 floats. The SSE loop's operations, so its bits.
__attribute__((target("avx512f"))) void unpool_row_pair_avx512(
    const float* dy, const std::int32_t* argmax, const float* relu_gate, std::int64_t i0,
    std::int64_t count, std::int64_t row_index, std::int64_t W, float* top, float* bottom) {
  const __m512i lane_columns =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i low_half =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i high_half =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i offsets[4] = {_mm512_setzero_si512(), _mm512_set1_epi32(1),
                              _mm512_set1_epi32(static_cast<std::int32_t>(W)),
                              _mm512_set1_epi32(static_cast<std::int32_t>(W + 1))};
  const __m512 zero = _mm512_setzero_ps();
  for (std::int64_t q = 0; q < count; q += 16) {
    const std::int64_t n = std::min<std::int64_t>(16, count - q), i = i0 + q;
    const auto lanes = static_cast<__mmask16>((1u << n) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(lanes, dy + i);
    if (relu_gate != nullptr) {
      const __m512 gate = _mm512_maskz_loadu_ps(lanes, relu_gate + i);
      v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(gate, zero, _CMP_GT_OQ), v);
    }
    v = _mm512_add_ps(zero, v);
    const __m512i first = _mm512_add_epi32(
        _mm512_set1_epi32(static_cast<std::int32_t>(row_index + 2 * q)), lane_columns);
    const __m512i offset = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(lanes, argmax + i), first);
    __m512 picked[4];
    __mmask16 any = 0;
    for (int k = 0; k < 4; ++k) {
      const __mmask16 hit = _mm512_cmpeq_epi32_mask(offset, offsets[k]);
      any = static_cast<__mmask16>(any | hit);
      picked[k] = _mm512_maskz_mov_ps(hit, v);
    }
    if ((any & lanes) != lanes) {
      for (std::int64_t k = 0; k < n; ++k)
        offset_in_window(argmax, i + k, row_index + 2 * (q + k), W);
    }
    // 2n floats per row: the first 16 from the low halves, the rest from the high halves.
    const auto low = static_cast<__mmask16>(n >= 8 ? 0xFFFFu : (1u << (2 * n)) - 1u);
    const auto high = static_cast<__mmask16>(n <= 8 ? 0u : (1u << (2 * n - 16)) - 1u);
    _mm512_mask_storeu_ps(top + 2 * q, low, _mm512_permutex2var_ps(picked[0], low_half, picked[1]));
    _mm512_mask_storeu_ps(top + 2 * q + 16, high,
                          _mm512_permutex2var_ps(picked[0], high_half, picked[1]));
    _mm512_mask_storeu_ps(bottom + 2 * q, low,
                          _mm512_permutex2var_ps(picked[2], low_half, picked[3]));
    _mm512_mask_storeu_ps(bottom + 2 * q + 16, high,
                          _mm512_permutex2var_ps(picked[2], high_half, picked[3]));
  }
}
#endif

}  // namespace

bool unpool_has_avx512() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
#else
  return false;
#endif
}

void throw_bad_argmax(std::int64_t i, std::int32_t a) {
  throw RuntimeFailure("maxpool2d_backward: argmax[" + std::to_string(i) +
                       "] = " + std::to_string(a) + " lies outside the input plane of that output");
}

// Backward of maxpool_plane_2x2 for one plane: each 2x2 block of dx is written once, the
// argmax's element = +0 + dy (the general path's add into a zeroed dx, -0 included) and the
// other three +0, row pair by row pair; rows and columns no window covers get +0. One pass of
// sequential stores instead of a fill followed by scattered adds.
void unpool_plane_2x2(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                      const float* relu_gate, std::int64_t plane, float* dx_plane,
                      std::int64_t dx_pitch, bool avx512) {
  const std::int64_t W = g.w, base = plane * plane_size(g);
  const std::int64_t out_base = plane * pooled_size(g);
  for (std::int64_t p = 0; p < g.p; ++p) {
    float* __restrict__ top = dx_plane + 2 * p * dx_pitch;
    float* __restrict__ bottom = top + dx_pitch;
    const std::int64_t row_index = base + 2 * p * W;
    std::int64_t q = 0;
#if defined(__x86_64__)
    if (avx512) {
      unpool_row_pair_avx512(dy, argmax, relu_gate, out_base + p * g.q, g.q, row_index, W, top,
                             bottom);
      q = g.q;
    }
#endif
#if defined(__SSE2__)
    // 4 outputs at a time: the masks of the argmax's offset in its block select v into the even
    // and odd columns of both rows, interleaved into 8 consecutive floats per row.
    const __m128i lane_columns = _mm_setr_epi32(0, 2, 4, 6);
    const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1),
                                _mm_set1_epi32(static_cast<std::int32_t>(W)),
                                _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
    for (; q + 4 <= g.q; q += 4) {
      const std::int64_t i = out_base + p * g.q + q;
      __m128 v = _mm_loadu_ps(dy + i);
      if (relu_gate != nullptr) {
        v = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(relu_gate + i), _mm_setzero_ps()), v);
      }
      v = _mm_add_ps(_mm_setzero_ps(), v);
      const __m128i first =
          _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(row_index + 2 * q)), lane_columns);
      const __m128i offset =
          _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(argmax + i)), first);
      __m128 picked[4];
      __m128i any = _mm_setzero_si128();
      for (int k = 0; k < 4; ++k) {
        const __m128i hit = _mm_cmpeq_epi32(offset, offsets[k]);
        any = _mm_or_si128(any, hit);
        picked[k] = _mm_and_ps(_mm_castsi128_ps(hit), v);
      }
      if (_mm_movemask_epi8(any) != 0xFFFF) {
        for (int k = 0; k < 4; ++k) offset_in_window(argmax, i + k, row_index + 2 * (q + k), W);
      }
      _mm_storeu_ps(top + 2 * q, _mm_unpacklo_ps(picked[0], picked[1]));
      _mm_storeu_ps(top + 2 * q + 4, _mm_unpackhi_ps(picked[0], picked[1]));
      _mm_storeu_ps(bottom + 2 * q, _mm_unpacklo_ps(picked[2], picked[3]));
      _mm_storeu_ps(bottom + 2 * q + 4, _mm_unpackhi_ps(picked[2], picked[3]));
    }
#endif
    for (; q < g.q; ++q) {
      const std::int64_t i = out_base + p * g.q + q;
      const float v = 0.0f + (relu_gate == nullptr ? dy[i] : relu_backward(relu_gate[i], dy[i]));
      const std::int64_t offset = offset_in_window(argmax, i, row_index + 2 * q, W);
      top[2 * q] = offset == 0 ? v : 0.0f;
      top[2 * q + 1] = offset == 1 ? v : 0.0f;
      bottom[2 * q] = offset == W ? v : 0.0f;
      bottom[2 * q + 1] = offset == W + 1 ? v : 0.0f;
    }
    std::fill(top + 2 * g.q, top + W, 0.0f);  // an odd last column
    std::fill(bottom + 2 * g.q, bottom + W, 0.0f);
  }
  for (std::int64_t row = 2 * std::int64_t(g.p); row < g.h; ++row) {  // an odd last row
    std::fill(dx_plane + row * dx_pitch, dx_plane + row * dx_pitch + W, 0.0f);
  }
}

}  // namespace ra::backend::cpu
