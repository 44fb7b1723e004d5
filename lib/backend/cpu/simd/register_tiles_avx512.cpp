// The AVX-512F + FMA tiles of the direct convolutions: 16-float vectors, c = fma(a, b, c) -- the
// chain of the avx512-fma GEMM (and of avx2-fma: the two give the same bits).
#include <cstdint>

#include "backend/cpu/simd/register_tiles.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#endif
#include "backend/cpu/simd/register_tile_templates.h"

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

// Requests the line of float `index` of `base`, its address formed as an integer: the index
// may lie past the array (a prefetch never faults; the line is then merely not used).
inline void prefetch_float(const float* base, std::int64_t index) {
  const std::uintptr_t address =
      reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(index) * sizeof(float);
  _mm_prefetch(reinterpret_cast<const char*>(address), _MM_HINT_T0);
}

// The storing pixel tile (simd/register_tiles.h, PixelStore): the chains, then per vector the
// epilogue on all lanes and a compress of the output lanes into consecutive floats, stored under
// a mask (a masked store never touches the floats past the output lanes). The gate is read the
// other way round: the consecutive gate floats of the output lanes, expanded onto those lanes.
template <int MR, int NV>
void pixel_store_tile(const TileArgs& t) {
  const PixelStore& s = t.store;
  const std::int64_t* vectors = s.vectors + s.position / Avx512::kWidth * kPixelStoreEntries;
  // The gate and output lines the epilogue touches, requested before the chains so that they arrive
  // while the chains run: the gate of a backward data pass comes from memory, and a load miss in
  // the epilogue would stall the tile on it after the chains, with nothing left to overlap it.
  RA_UNROLL
  for (int v = 0; v < NV; ++v) {
    const std::int64_t pixel = vectors[v * kPixelStoreEntries + 2];
    RA_UNROLL
    for (int i = 0; i < MR; ++i) {
      const std::int64_t at = i * t.out_stride + pixel;
      // A vector's 16 floats span at most two lines: its last float's, and its first float's,
      // which is the previous vector's last line unless this is the first vector.
      for (const std::int64_t lane : {std::int64_t(0), std::int64_t(15)}) {
        if (lane == 0 && v > 0) continue;
        if (s.gate != nullptr) prefetch_float(s.gate, at + lane);
        prefetch_float(t.out, at + lane);
      }
    }
  }
  __m512 acc[MR][NV];
  pixel_chains<Avx512, MR, NV, false>(t, t.base, acc);
  const __m512 zero = _mm512_setzero_ps();
  RA_UNROLL
  for (int v = 0; v < NV; ++v) {
    const std::int64_t* entry = vectors + v * kPixelStoreEntries;
    const auto lanes = static_cast<__mmask16>(entry[0]);
    const auto packed = static_cast<__mmask16>(entry[1]);
    const std::int64_t pixel = entry[2];
    RA_UNROLL
    for (int i = 0; i < MR; ++i) {
      __m512 value = acc[i][v];
      if (s.addend != nullptr) value = _mm512_add_ps(value, _mm512_set1_ps(s.addend[i]));
      // relu and relu_backward (activation.h): the value, or +0, where x > 0 is false (NaN too).
      if (s.relu) value = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(value, zero, _CMP_GT_OQ), value);
      const std::int64_t at = i * t.out_stride + pixel;
      if (s.gate != nullptr) {
        const __m512 gate =
            _mm512_maskz_expand_ps(lanes, _mm512_maskz_loadu_ps(packed, s.gate + at));
        value = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(gate, zero, _CMP_GT_OQ), value);
      }
      _mm512_mask_storeu_ps(t.out + at, packed, _mm512_maskz_compress_ps(lanes, value));
    }
  }
}

struct PixelStoreTiles {
  template <int MR, int NV>
  static constexpr TileFunction of() {
    return &pixel_store_tile<MR, NV>;
  }
};

}  // namespace

TileFunction avx512_pixel_store_tile(int rows, int vectors) {
  // Every shape of the avx512-fma pixel tile.
  static const TileShapeTable<PixelStoreTiles, kAvx512PixelTile.lanes / Avx512::kWidth,
                              kAvx512PixelTile.rows>
      table;
  return table.get(rows, vectors);
}

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
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ra::backend::cpu::direct_detail {
TileFunction avx512_pixel_tile(bool, int, int) {
  throw RuntimeFailure("the avx512-fma direct convolution exists only in x86 builds");
}
TileFunction avx512_tile(bool, int, int) {
  throw RuntimeFailure("the avx512-fma direct convolution exists only in x86 builds");
}
TileFunction avx512_pixel_store_tile(int, int) {
  throw RuntimeFailure("the avx512-fma direct convolution exists only in x86 builds");
}
}  // namespace ra::backend::cpu::direct_detail

#endif
