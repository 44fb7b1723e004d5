// The AVX2 transposition of transpose.h: 8 x 8 blocks transposed in ymm registers (8 loads, 24
// shuffles, 8 stores per 64 floats, against 4 SSE 4 x 4 blocks of 8 loads, 8 shuffles and 8 stores
// each). Copies only. The conv filter gradient transposes every image's output gradient with it
// (direct_conv.cpp): for a 1x1 conv of 16 -> 64 channels on 32 x 32, the SSE transposition took as
// long as the tiles.
#include "backend/cpu/simd/transpose.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

namespace ra::backend::cpu {
namespace {

// dst[c][r] = src[r][c] for the 8 x 8 block at src (rows src_stride apart) into dst.
inline void transpose_block_avx2(const float* src, std::int64_t src_stride, float* dst,
                                 std::int64_t dst_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves.
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}

}  // namespace

void transpose_into_avx2(const float* src, std::int64_t src_stride, std::int64_t rows,
                         std::int64_t cols, float* dst, std::int64_t dst_stride) {
  // Bands of 16 source rows, as the SSE code: a band fills a cache line of each destination row.
  constexpr std::int64_t kBand = 16;
  const std::int64_t block_rows = rows - rows % 8, block_cols = cols - cols % 8;
  for (std::int64_t r0 = 0; r0 < block_rows; r0 += kBand) {
    const std::int64_t r1 = std::min(r0 + kBand, block_rows);
    for (std::int64_t c = 0; c < block_cols; c += 8) {
      for (std::int64_t r = r0; r < r1; r += 8) {
        transpose_block_avx2(src + r * src_stride + c, src_stride, dst + c * dst_stride + r,
                             dst_stride);
      }
    }
  }
  // The edges: the columns past the last whole block of the whole rows, then the last rows.
  if (block_cols < cols) {
    transpose_into(src + block_cols, src_stride, block_rows, cols - block_cols,
                   dst + block_cols * dst_stride, dst_stride);
  }
  if (block_rows < rows) {
    transpose_into(src + block_rows * src_stride, src_stride, rows - block_rows, cols,
                   dst + block_rows, dst_stride);
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
void transpose_into_avx2(const float*, std::int64_t, std::int64_t, std::int64_t, float*,
                         std::int64_t) {
  throw RuntimeFailure("the avx2 transposition exists only in x86 builds");
}
}  // namespace ra::backend::cpu

#endif
