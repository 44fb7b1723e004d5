// maxpool_plane_2x2 (maxpool_2x2.h) in AVX-512F: 16 outputs per step instead of 4. The even and
// odd columns of 32 input floats per row are the windows' left and right candidates; the same
// strict > sequence in the same order, lane by lane, so the same values and argmax.
#include <cstdint>

#include "backend/cpu/pool/maxpool_2x2.h"
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

namespace ra::backend::cpu {

void maxpool_plane_2x2_avx512(const PoolGeometry& g, const float* plane, std::int64_t index_base,
                              float* y, std::int32_t* argmax) {
  const std::int64_t W = g.w;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // Window order after the top-left: top-right, bottom-left, bottom-right (maxpool_plane_2x2).
  const __m512i offsets[3] = {_mm512_set1_epi32(1), _mm512_set1_epi32(static_cast<std::int32_t>(W)),
                              _mm512_set1_epi32(static_cast<std::int32_t>(W + 1))};
  for (std::int64_t p = 0; p < g.p; ++p) {
    const float* top = plane + 2 * p * W;
    const float* bottom = top + W;
    const auto row_index = static_cast<std::int32_t>(index_base + 2 * p * W);
    for (std::int64_t q0 = 0; q0 < g.q; q0 += 16) {
      const std::int64_t outputs = std::min<std::int64_t>(16, g.q - q0);
      const std::int64_t columns = 2 * outputs;  // input floats read per row
      const auto out_mask = static_cast<__mmask16>((1u << outputs) - 1);
      const auto lo_mask = static_cast<__mmask16>(columns >= 16 ? 0xFFFFu : (1u << columns) - 1);
      const auto hi_mask = static_cast<__mmask16>(columns > 16 ? (1u << (columns - 16)) - 1 : 0u);
      const float* t = top + 2 * q0;
      const float* b = bottom + 2 * q0;
      const __m512 top_lo = _mm512_maskz_loadu_ps(lo_mask, t);
      const __m512 top_hi = _mm512_maskz_loadu_ps(hi_mask, t + 16);
      const __m512 bottom_lo = _mm512_maskz_loadu_ps(lo_mask, b);
      const __m512 bottom_hi = _mm512_maskz_loadu_ps(hi_mask, b + 16);
      const __m512 candidates[3] = {_mm512_permutex2var_ps(top_lo, odd, top_hi),
                                    _mm512_permutex2var_ps(bottom_lo, even, bottom_hi),
                                    _mm512_permutex2var_ps(bottom_lo, odd, bottom_hi)};
      __m512 best = _mm512_permutex2var_ps(top_lo, even, top_hi);
      __m512i offset = _mm512_setzero_si512();
      for (int k = 0; k < 3; ++k) {
        // Strict >, false for NaN: the first maximum wins, as in the scalar loop.
        const __mmask16 wins = _mm512_cmp_ps_mask(candidates[k], best, _CMP_GT_OQ);
        best = _mm512_mask_mov_ps(best, wins, candidates[k]);
        offset = _mm512_mask_mov_epi32(offset, wins, offsets[k]);
      }
      _mm512_mask_storeu_ps(y + p * g.q + q0, out_mask, best);
      const __m512i first =
          _mm512_add_epi32(_mm512_set1_epi32(row_index + static_cast<std::int32_t>(2 * q0)), even);
      _mm512_mask_storeu_epi32(argmax + p * g.q + q0, out_mask, _mm512_add_epi32(first, offset));
    }
  }
}

}  // namespace ra::backend::cpu
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ra::backend::cpu {
void maxpool_plane_2x2_avx512(const PoolGeometry&, const float*, std::int64_t, float*,
                              std::int32_t*) {
  throw RuntimeFailure("the avx512-fma max-pool exists only in x86 builds");
}
}  // namespace ra::backend::cpu

#endif
