#pragma once
// The Keras max-pool (2x2, stride 2, no padding) of one plane, shared by maxpool2d_forward and the
// conv forward that pools its own output (conv2d_forward_maxpool): the same comparisons in the
// same order, so the same values and argmax either way.
#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backend/cpu/simd/isa.h"
#include "backend/geometry.h"

namespace ra::backend::cpu {

// Floats per input plane (H x W) and per output plane (P x Q) of a pool.
inline std::int64_t plane_size(const PoolGeometry& g) {
  return std::int64_t(g.h) * g.w;
}
inline std::int64_t pooled_size(const PoolGeometry& g) {
  return std::int64_t(g.p) * g.q;
}

// The Keras 2x2 stride-2 unpadded pool, every window inside the image: the general loop of
// maxpool2d_forward (cpu_pool.cpp) with its bounds and window loops unrolled (same comparisons in
// the same order, so same bits and same argmax), which the compiler turns into straight-line code
// instead of 4 nested loops.
inline bool is_plain_2x2(const PoolGeometry& g) {
  return g.pool_h == 2 && g.pool_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_top == 0 &&
         g.pad_left == 0 && 2 * std::int64_t(g.p) <= g.h && 2 * std::int64_t(g.q) <= g.w;
}

// One plane: reads plane[H][W], writes y[P][Q] and argmax[P][Q] = index_base + the winner's
// offset in the plane (its flat index in the whole input tensor when index_base is the plane's).
inline void maxpool_plane_2x2(const PoolGeometry& g, const float* plane, std::int64_t index_base,
                              float* y, std::int32_t* argmax) {
  const std::int64_t W = g.w;
  for (std::int64_t p = 0; p < g.p; ++p) {
    const float* __restrict__ top = plane + 2 * p * W;
    const float* __restrict__ bottom = top + W;
    float* __restrict__ y_row = y + p * g.q;
    std::int32_t* __restrict__ argmax_row = argmax + p * g.q;
    const auto row_index = static_cast<std::int32_t>(index_base + 2 * p * W);
    std::int64_t q = 0;
#if defined(__SSE2__)
    // 4 outputs at a time: the even and odd columns of two 8-float loads per input row are the
    // window's left and right candidates; the same strict > sequence as below, lane by lane
    // (_mm_cmpgt_ps is false for NaN, like the scalar >).
    const __m128i lane_columns = _mm_setr_epi32(0, 2, 4, 6);
    for (; q + 4 <= g.q; q += 4) {
      const __m128 top_lo = _mm_loadu_ps(top + 2 * q), top_hi = _mm_loadu_ps(top + 2 * q + 4);
      const __m128 bottom_lo = _mm_loadu_ps(bottom + 2 * q);
      const __m128 bottom_hi = _mm_loadu_ps(bottom + 2 * q + 4);
      const __m128 candidates[3] = {_mm_shuffle_ps(top_lo, top_hi, _MM_SHUFFLE(3, 1, 3, 1)),
                                    _mm_shuffle_ps(bottom_lo, bottom_hi, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm_shuffle_ps(bottom_lo, bottom_hi, _MM_SHUFFLE(3, 1, 3, 1))};
      const __m128i offsets[3] = {_mm_set1_epi32(1), _mm_set1_epi32(static_cast<std::int32_t>(W)),
                                  _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
      __m128 best = _mm_shuffle_ps(top_lo, top_hi, _MM_SHUFFLE(2, 0, 2, 0));
      __m128i offset = _mm_setzero_si128();
      for (int k = 0; k < 3; ++k) {
        const __m128 wins = _mm_cmpgt_ps(candidates[k], best);
        const __m128i wins_i = _mm_castps_si128(wins);
        best = _mm_or_ps(_mm_and_ps(wins, candidates[k]), _mm_andnot_ps(wins, best));
        offset = _mm_or_si128(_mm_and_si128(wins_i, offsets[k]), _mm_andnot_si128(wins_i, offset));
      }
      _mm_storeu_ps(y_row + q, best);
      const __m128i first = _mm_set1_epi32(row_index + static_cast<std::int32_t>(2 * q));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(argmax_row + q),
                       _mm_add_epi32(_mm_add_epi32(first, lane_columns), offset));
    }
#endif
    for (; q < g.q; ++q) {
      // Candidates in row-major window order; strict > keeps the first maximum (NaN never
      // wins a comparison, as in the general loop). Selects, not branches: after a ReLU the
      // winner is a coin toss that a branch predictor loses half the time.
      float best = top[2 * q];
      std::int32_t offset = 0;
      const float candidates[3] = {top[2 * q + 1], bottom[2 * q], bottom[2 * q + 1]};
      const std::int32_t offsets[3] = {1, static_cast<std::int32_t>(W),
                                       static_cast<std::int32_t>(W + 1)};
      for (int k = 0; k < 3; ++k) {
        const bool wins = candidates[k] > best;
        best = wins ? candidates[k] : best;
        offset = wins ? offsets[k] : offset;
      }
      y_row[q] = best;
      argmax_row[q] = row_index + static_cast<std::int32_t>(2 * q) + offset;
    }
  }
}

// The same in AVX-512F (maxpool_2x2_avx512.cpp): 16 outputs per step, the same comparisons lane
// by lane, so the same values and argmax. Only where the CPU has AVX-512F.
void maxpool_plane_2x2_avx512(const PoolGeometry& g, const float* plane, std::int64_t index_base,
                              float* y, std::int32_t* argmax);

// maxpool_plane_2x2 by the code of instruction set `isa` (avx512-fma: the AVX-512 loop).
inline void maxpool_plane_2x2(const PoolGeometry& g, const float* plane, std::int64_t index_base,
                              float* y, std::int32_t* argmax, Isa isa) {
  if (isa == Isa::avx512_fma) {
    maxpool_plane_2x2_avx512(g, plane, index_base, y, argmax);
  } else {
    maxpool_plane_2x2(g, plane, index_base, y, argmax);
  }
}

// The error of an argmax[i] = a that no forward pass over that input plane wrote.
[[noreturn]] void throw_bad_argmax(std::int64_t i, std::int32_t a);

// The backward of maxpool_plane_2x2 for plane `plane` of a 2x2/2 pool (is_plain_2x2): dy,
// argmax and relu_gate are the whole tensors (plane p's outputs at p * P * Q), dx_plane the
// plane's input gradient [H][W], rows dx_pitch floats apart, every element written: the argmax's
// element = +0 + g (g = dy, or relu_backward(relu_gate, dy) with a gate), the rest +0. Throws for
// an argmax outside its window.
void unpool_plane_2x2(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                      const float* relu_gate, std::int64_t plane, float* dx_plane,
                      std::int64_t dx_pitch);

}  // namespace ra::backend::cpu
