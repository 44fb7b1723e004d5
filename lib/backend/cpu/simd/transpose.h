#pragma once
// Blocked matrix transposition, the copy behind the packing of GEMM panels and the layout changes
// of the direct convolutions. Copies only, so bits are never affected.
#include <algorithm>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ra::backend::cpu {

namespace transpose_detail {

// The rows [r0, r1) of a transposition (r1 - r0 a multiple of 4 when SSE is used).
template <bool kAdd>
inline void transpose_rows(const float* src, std::int64_t src_stride, std::int64_t r0,
                           std::int64_t r1, std::int64_t cols, float* dst, std::int64_t dst_stride,
                           const float* addend) {
  std::int64_t c = 0;
#if defined(__SSE2__)
  for (; c + 4 <= cols; c += 4) {
    for (std::int64_t r = r0; r < r1; r += 4) {
      const float* s = src + r * src_stride + c;
      __m128 x0 = _mm_loadu_ps(s), x1 = _mm_loadu_ps(s + src_stride);
      __m128 x2 = _mm_loadu_ps(s + 2 * src_stride), x3 = _mm_loadu_ps(s + 3 * src_stride);
      _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
      if constexpr (kAdd) {
        x0 = _mm_add_ps(x0, _mm_set1_ps(addend[c]));
        x1 = _mm_add_ps(x1, _mm_set1_ps(addend[c + 1]));
        x2 = _mm_add_ps(x2, _mm_set1_ps(addend[c + 2]));
        x3 = _mm_add_ps(x3, _mm_set1_ps(addend[c + 3]));
      }
      float* d = dst + c * dst_stride + r;
      _mm_storeu_ps(d, x0);
      _mm_storeu_ps(d + dst_stride, x1);
      _mm_storeu_ps(d + 2 * dst_stride, x2);
      _mm_storeu_ps(d + 3 * dst_stride, x3);
    }
  }
#endif
  for (; c < cols; ++c) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float v = src[r * src_stride + c];
      if constexpr (kAdd) {
        dst[c * dst_stride + r] = v + addend[c];
      } else {
        dst[c * dst_stride + r] = v;
      }
    }
  }
}

template <bool kAdd>
inline void transpose(const float* src, std::int64_t src_stride, std::int64_t rows,
                      std::int64_t cols, float* dst, std::int64_t dst_stride, const float* addend) {
  // Bands of 16 source rows: a band writes 16 consecutive floats (one cache line) of each
  // destination row before moving on, so every destination line is filled while it is in L1. (Row
  // by row, each 16-byte store of a large transposition would miss L1 and read its line from L2
  // first: four L2 reads per line instead of one.)
  constexpr std::int64_t kBand = 16;
  const std::int64_t vector_rows = rows - rows % 4;
  for (std::int64_t r0 = 0; r0 < vector_rows; r0 += kBand) {
    transpose_rows<kAdd>(src, src_stride, r0, std::min(r0 + kBand, vector_rows), cols, dst,
                         dst_stride, addend);
  }
  // The last rows % 4 rows, without SSE.
  for (std::int64_t r = vector_rows; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = src[r * src_stride + c];
      if constexpr (kAdd) {
        dst[c * dst_stride + r] = v + addend[c];
      } else {
        dst[c * dst_stride + r] = v;
      }
    }
  }
}

}  // namespace transpose_detail

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols. Element by element this
// is a scalar load and a strided store per float; 4 x 4 SSE transposes (baseline x86-64) move 16
// floats in 8 loads/stores and 8 shuffles.
inline void transpose_into(const float* src, std::int64_t src_stride, std::int64_t rows,
                           std::int64_t cols, float* dst, std::int64_t dst_stride) {
  transpose_detail::transpose<false>(src, src_stride, rows, cols, dst, dst_stride, nullptr);
}

// transpose_into with 8 x 8 AVX2 register blocks (simd/transpose_avx2.cpp): the same copy, callable
// only where the CPU has AVX2 (isa_supported(Isa::avx2_fma)).
void transpose_into_avx2(const float* src, std::int64_t src_stride, std::int64_t rows,
                         std::int64_t cols, float* dst, std::int64_t dst_stride);

// The same, with addend[c] added to every element of destination row c (one rounding: the
// conv bias, added as the GEMM path adds it after the sum).
inline void transpose_add_into(const float* src, std::int64_t src_stride, std::int64_t rows,
                               std::int64_t cols, float* dst, std::int64_t dst_stride,
                               const float* addend) {
  transpose_detail::transpose<true>(src, src_stride, rows, cols, dst, dst_stride, addend);
}

}  // namespace ra::backend::cpu
