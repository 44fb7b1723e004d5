// The AVX2 + FMA tiles of the direct convolutions: 8-float vectors, c = fma(a, b, c) -- the
// chain of the avx2-fma GEMM (and of avx512-fma: the two give the same bits).
#include <cstdint>

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

// The lane permutations of the storing tile, by the 8-bit mask of a vector's output lanes:
// compress[k] = the lane of the k-th output lane (k < count), expand[l] = the rank of lane l
// among the output lanes (the packed float that lane l reads back), count = the output lanes.
struct LanePermutation {
  std::int32_t compress[8] = {};
  std::int32_t expand[8] = {};
  std::int32_t count = 0;
};

struct LanePermutations {
  LanePermutation of[256];
  constexpr LanePermutations() {
    for (int mask = 0; mask < 256; ++mask) {
      LanePermutation& p = of[mask];
      for (int lane = 0; lane < 8; ++lane) {
        p.expand[lane] = p.count;
        if ((mask >> lane) & 1) p.compress[p.count++] = lane;
      }
    }
  }
};
constexpr LanePermutations kLanePermutations;

// Requests the line of float `index` of `base`, its address formed as an integer (the index may lie
// past the array: a prefetch never faults).
inline void avx2_prefetch_float(const float* base, std::int64_t index) {
  const std::uintptr_t address =
      reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(index) * sizeof(float);
  _mm_prefetch(reinterpret_cast<const char*>(address), _MM_HINT_T0);
}

// The epilogue's operands, read once a tile: the stores through out may alias the TileArgs, so
// read through PixelStore the compiler would load them again for every vector.
struct Epilogue {
  const float* addend = nullptr;
  const float* gate = nullptr;
  bool relu = false;
};

// The epilogue of the storing tile on one vector of row i (PixelStore): + addend, relu, the gate,
// with the float operations of store_band (activation.h: the value or +0 where x > 0 is false).
// A vector whose lanes are all output pixels is a plain load and store; any other is compressed
// by a lane permutation and stored under a mask (AVX2 has no compressing store), its gate read
// under the same mask and expanded by the inverse permutation. kDense: every lane is one.
template <bool kDense>
inline void store_vector(const Epilogue& e, std::int64_t lanes, int i, std::int64_t at,
                         __m256 value, float* out) {
  const __m256 zero = _mm256_setzero_ps();
  if (e.addend != nullptr) value = _mm256_add_ps(value, _mm256_set1_ps(e.addend[i]));
  if (e.relu) value = _mm256_and_ps(_mm256_cmp_ps(value, zero, _CMP_GT_OQ), value);
  if (kDense || lanes == 0xFF) {
    if (e.gate != nullptr) {
      const __m256 gate = _mm256_loadu_ps(e.gate + at);
      value = _mm256_and_ps(_mm256_cmp_ps(gate, zero, _CMP_GT_OQ), value);
    }
    _mm256_storeu_ps(out + at, value);
    return;
  }
  const LanePermutation& p = kLanePermutations.of[lanes];
  const __m256i packed =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(p.count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  if (e.gate != nullptr) {
    const __m256 gate =
        _mm256_permutevar8x32_ps(_mm256_maskload_ps(e.gate + at, packed),
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.expand)));
    value = _mm256_and_ps(_mm256_cmp_ps(gate, zero, _CMP_GT_OQ), value);
  }
  _mm256_maskstore_ps(out + at, packed,
                      _mm256_permutevar8x32_ps(
                          value, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.compress))));
}

// The storing pixel tile (simd/register_tiles.h, PixelStore): the chains, then per vector the
// epilogue and the store of its output lanes into consecutive floats. The output and gate lines
// are requested before the chains, so that they arrive while the chains run. With kVectorStride,
// the vectors' source lies t.vector_stride apart (pixel_row_store_tile_function). kDense: every
// lane of vector v is an output pixel, from pixel s.position + v * 8 on (row vectors, and wide
// rows that discard no position), so no PixelStore::vectors entry is read.
template <int MR, int NV, bool kVectorStride = false, bool kDense = false>
void avx2_store_tile(const TileArgs& t) {
  constexpr int W = Avx2::kWidth;
  const PixelStore& s = t.store;
  const Epilogue e{s.addend, s.gate, s.relu};
  float* const out = t.out;
  const std::int64_t out_stride = t.out_stride, columns = kDense ? t.columns : 1;
  for (std::int64_t column = 0; column < columns; ++column) {
    const std::int64_t position = s.position + column * (NV * W);
    const std::int64_t* vectors = kDense ? nullptr : s.vectors + position / W * kPixelStoreEntries;
    std::int64_t pixel[NV], lanes[NV];
    RA_UNROLL
    for (int v = 0; v < NV; ++v) {
      pixel[v] = kDense ? position + v * W : vectors[v * kPixelStoreEntries + 2];
      lanes[v] = kDense ? 0xFF : vectors[v * kPixelStoreEntries];
      RA_UNROLL
      for (int i = 0; i < MR; ++i) {
        // A vector's 8 floats span at most two lines.
        if (e.gate != nullptr) avx2_prefetch_float(e.gate, i * out_stride + pixel[v] + 7);
        avx2_prefetch_float(out, i * out_stride + pixel[v] + 7);
      }
    }
    __m256 acc[MR][NV];
    pixel_chains<Avx2, MR, NV, false, kVectorStride>(t, t.base + column * t.column_stride, acc);
    RA_UNROLL
    for (int v = 0; v < NV; ++v) {
      RA_UNROLL
      for (int i = 0; i < MR; ++i) {
        store_vector<kDense>(e, lanes[v], i, i * out_stride + pixel[v], acc[i][v], out);
      }
    }
  }
}

template <bool kVectorStride, bool kDense>
struct Avx2PixelStoreTiles {
  template <int MR, int NV>
  static constexpr TileFunction of() {
    return &avx2_store_tile<MR, NV, kVectorStride, kDense>;
  }
};

}  // namespace

TileFunction avx2_pixel_store_tile(int rows, int vectors, bool dense) {
  // Every shape of the avx2-fma pixel tile.
  static const TileShapeTable<Avx2PixelStoreTiles<false, false>,
                              kAvx2PixelTile.lanes / Avx2::kWidth, kAvx2PixelTile.rows>
      table;
  static const TileShapeTable<Avx2PixelStoreTiles<false, true>, kAvx2PixelTile.lanes / Avx2::kWidth,
                              kAvx2PixelTile.rows>
      dense_table;
  return dense ? dense_table.get(rows, vectors) : table.get(rows, vectors);
}

TileFunction avx2_pixel_row_store_tile(int rows, int vectors) {
  static const TileShapeTable<Avx2PixelStoreTiles<true, true>, kAvx2PixelTile.lanes / Avx2::kWidth,
                              kAvx2PixelTile.rows>
      table;
  return table.get(rows, vectors);
}

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
TileFunction avx2_pixel_store_tile(int, int, bool) {
  throw RuntimeFailure("the avx2-fma direct convolution exists only in x86 builds");
}
TileFunction avx2_pixel_row_store_tile(int, int) {
  throw RuntimeFailure("the avx2-fma direct convolution exists only in x86 builds");
}
}  // namespace ra::backend::cpu::direct_detail

#endif
