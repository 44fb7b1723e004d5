// The AVX-512F + FMA tiles of the direct convolutions: 16-float vectors, c = fma(a, b, c) -- the
// chain of the avx512-fma GEMM (and of avx2-fma: the two give the same bits).
#include "backend/cpu/direct_conv_kernels.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#include "backend/cpu/direct_conv_tile.h"

namespace ra::backend::cpu::direct_detail {
namespace {

struct Avx512 {
  using T = __m512;
  static constexpr int kWidth = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static T mul_add(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace

TileFunction avx512_pixel_tile(bool strided_depth, int rows, int vectors) {
  static const PixelTileTable<Avx512, kAvx512PixelTile.lanes / Avx512::kWidth,
                              kAvx512PixelTile.rows>
      table;
  return table.get(strided_depth, rows, vectors);
}

TileFunction avx512_tile(bool grid, int rows, int vectors) {
  static const TileTable<Avx512, kAvx512TileLimits.max_vectors, avx512_tile_rows> table;
  return table.get(grid, rows, vectors);
}

}  // namespace ra::backend::cpu::direct_detail
#pragma GCC pop_options

#else

namespace ra::backend::cpu::direct_detail {
TileFunction avx512_pixel_tile(bool, int, int) {
  throw RuntimeFailure("the avx512-fma direct convolution exists only in x86 builds");
}
TileFunction avx512_tile(bool, int, int) {
  throw RuntimeFailure("the avx512-fma direct convolution exists only in x86 builds");
}
}  // namespace ra::backend::cpu::direct_detail

#endif
