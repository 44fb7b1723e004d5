// The AVX2 + FMA tiles of the direct convolutions: 8-float vectors, c = fma(a, b, c) -- the
// chain of the avx2-fma GEMM (and of avx512-fma: the two give the same bits).
#include "backend/cpu/simd/register_tiles.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#include "backend/cpu/simd/register_tile_templates.h"

namespace ra::backend::cpu::direct_detail {
namespace {

struct Avx2 {
  using T = __m256;
  static constexpr int kWidth = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T mul_add(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

TileFunction avx2_pixel_tile(bool strided_depth, int rows, int vectors) {
  static const PixelTileTable<Avx2, kAvx2PixelTile.lanes / Avx2::kWidth, kAvx2PixelTile.rows> table;
  return table.get(strided_depth, rows, vectors);
}

TileFunction avx2_tile(bool grid, int rows, int vectors) {
  static const TileTable<Avx2, kAvx2TileLimits.max_vectors, avx2_tile_rows> table;
  return table.get(grid, rows, vectors);
}

}  // namespace ra::backend::cpu::direct_detail
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ra::backend::cpu::direct_detail {
TileFunction avx2_pixel_tile(bool, int, int) {
  throw RuntimeFailure("the avx2-fma direct convolution exists only in x86 builds");
}
TileFunction avx2_tile(bool, int, int) {
  throw RuntimeFailure("the avx2-fma direct convolution exists only in x86 builds");
}
}  // namespace ra::backend::cpu::direct_detail

#endif
