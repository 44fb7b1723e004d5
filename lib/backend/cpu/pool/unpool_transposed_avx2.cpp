// The AVX2 column sums of unpool_transposed.h: 8 channels per vector, each lane the portable
// code's chain for its channel (element j into lane sum j % 8, ascending j, then plane_sum's
// tree), so the floats are the portable code's. The bias gradient of a conv filter gradient is
// summed with these from the pixel-major dy_t of every image (direct_conv.cpp); the portable code
// runs 4 channels per SSE vector and held some 1.5% of a ResNet29v2 step.
#include <cstdint>

#include "backend/cpu/pool/unpool_transposed.h"
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

namespace ra::backend::cpu::unpool_detail {

void add_column_plane_sums_avx2(const float* rows, std::int64_t count, std::int64_t stride,
                                std::int64_t channels, float* sums) {
  constexpr std::int64_t kBlock = 8;  // channels per vector
  const std::int64_t whole_channels = channels / kBlock * kBlock;
  const std::int64_t whole = count - count % 8;
  for (std::int64_t c0 = 0; c0 < whole_channels; c0 += kBlock) {
    __m256 lanes[8];
    for (__m256& lane : lanes) lane = _mm256_setzero_ps();
    const float* column = rows + c0;
    for (std::int64_t j = 0; j < whole; j += 8) {
      for (int l = 0; l < 8; ++l) {
        lanes[l] = _mm256_add_ps(lanes[l], _mm256_loadu_ps(column + (j + l) * stride));
      }
    }
    for (std::int64_t j = whole; j < count; ++j) {
      lanes[j - whole] = _mm256_add_ps(lanes[j - whole], _mm256_loadu_ps(column + j * stride));
    }
    // plane_sum_tree's order (reduction.h), written out: that template is defined outside this
    // unit's target region, so an instantiation of it would not be AVX2 code.
    const __m256 tree = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(lanes[0], lanes[4]), _mm256_add_ps(lanes[2], lanes[6])),
        _mm256_add_ps(_mm256_add_ps(lanes[1], lanes[5]), _mm256_add_ps(lanes[3], lanes[7])));
    _mm256_storeu_ps(sums + c0, _mm256_add_ps(_mm256_loadu_ps(sums + c0), tree));
  }
  add_column_plane_sums_portable(rows, count, stride, whole_channels, channels, sums);
}

}  // namespace ra::backend::cpu::unpool_detail
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ra::backend::cpu::unpool_detail {
void add_column_plane_sums_avx2(const float*, std::int64_t, std::int64_t, std::int64_t, float*) {
  throw RuntimeFailure("the avx2-fma column sums exist only in x86 builds");
}
}  // namespace ra::backend::cpu::unpool_detail

#endif
