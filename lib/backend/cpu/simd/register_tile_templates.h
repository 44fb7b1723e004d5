#pragma once
// The micro-kernel of the direct convolutions (direct_conv.h), written once for every vector
// type. Included only by the variant units simd/register_tiles_{portable,avx2,avx512}.cpp, each of
// which instantiates it with its own vector type V (declared in an anonymous namespace there, so
// the instantiations stay inside that unit) between `#pragma GCC push_options / target(...)`.
//
// V provides: type T, constexpr int kWidth, zero(), load(p), store(p, v), broadcast(p),
// mul_add(a, b, c) = the variant's GEMM step (fma, or a rounded product then a rounded add).
#include <cstdint>

#include "backend/cpu/simd/register_tiles.h"

namespace ra::backend::cpu::direct_detail {

// Full unrolling of the register-tile loops: a loop GCC leaves rolled keeps its accumulators in
// memory, spilled around the depth loop.
#define RA_UNROLL _Pragma("GCC unroll 32")

// The gathered tile of simd/register_tiles.h for MR rows and NV vectors: step d of row i
// broadcasts base[row_offsets[i] + depth_offsets[d]]. The MR row offsets stay in general
// registers (MR <= 8), so a step costs one offset load, NV vector loads, MR broadcasts and
// MR * NV multiply-adds.
//
// With kGrid, the depth is a grid of depth / depth_cols rows of depth_cols steps, step (row, col)
// at row * depth_row_stride + col * depth_col_stride (output pixels, for the filter gradient):
// pointer increments instead of one table load per step.
template <class V, int MR, int NV, bool kGrid>
void tile(const TileArgs& t) {
  using T = typename V::T;
  constexpr int W = V::kWidth;
  std::int64_t rows[MR];
  RA_UNROLL
  for (int i = 0; i < MR; ++i) rows[i] = t.row_offsets[i];
  T acc[MR][NV];
  RA_UNROLL
  for (int i = 0; i < MR; ++i) {
    RA_UNROLL
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = t.first ? V::zero() : V::load(t.out + i * t.out_stride + v * W);
    }
  }
  const float* panel = t.panel;
  const auto step = [&](const float* source) {
    T b[NV];
    RA_UNROLL
    for (int v = 0; v < NV; ++v) b[v] = V::load(panel + v * W);
    RA_UNROLL
    for (int i = 0; i < MR; ++i) {
      const T a = V::broadcast(source + rows[i]);
      RA_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul_add(a, b[v], acc[i][v]);
    }
    panel += t.panel_stride;
  };
  if constexpr (kGrid) {
    const std::int64_t grid_rows = t.depth / t.depth_cols, cols = t.depth_cols;
    const std::int64_t row_stride = t.depth_row_stride, col_stride = t.depth_col_stride;
    const float* const base = t.base;
    for (std::int64_t r = 0; r < grid_rows; ++r) {
      // Integer offsets: no pointer is formed past the source.
      std::int64_t at = r * row_stride;
      for (std::int64_t c = 0; c < cols; ++c, at += col_stride) step(base + at);
    }
  } else {
    for (std::int64_t d = 0; d < t.depth; ++d) step(t.base + t.depth_offsets[d]);
  }
  RA_UNROLL
  for (int i = 0; i < MR; ++i) {
    RA_UNROLL
    for (int v = 0; v < NV; ++v) V::store(t.out + i * t.out_stride + v * W, acc[i][v]);
  }
}

// The chains of the pixel-lane tile (simd/register_tiles.h, PixelTile) into acc: step d multiplies
// NV vectors of consecutive source floats, base + depth(d) + [0, NV * kWidth), with MR broadcasts
// from the panel row panel + d * panel_stride + [0, MR); acc[i][v] holds rows i < MR (filters or
// channels), lanes v * kWidth + [0, kWidth) (consecutive output positions), or with
// kVectorStride the kWidth positions at v * t.vector_stride. Inlined into each tile, so that acc
// stays in registers.
template <class V, int MR, int NV, bool kStridedDepth, bool kVectorStride = false>
[[gnu::always_inline]] inline void pixel_chains(const TileArgs& t, const float* base,
                                                typename V::T (&acc)[MR][NV]) {
  using T = typename V::T;
  constexpr int W = V::kWidth;
  RA_UNROLL
  for (int i = 0; i < MR; ++i) {
    RA_UNROLL
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = t.first ? V::zero() : V::load(t.out + i * t.out_stride + v * W);
    }
  }
  const float* panel = t.panel;
  std::int64_t strided = 0;  // an integer: no pointer is formed past the source
  for (std::int64_t d = 0; d < t.depth; ++d, panel += t.panel_stride) {
    const float* source = base + (kStridedDepth ? strided : t.depth_offsets[d]);
    if constexpr (kStridedDepth) strided += t.depth_stride;
    T b[NV];
    RA_UNROLL
    for (int v = 0; v < NV; ++v) {
      b[v] = V::load(source + (kVectorStride ? v * t.vector_stride : std::int64_t(v) * W));
    }
    RA_UNROLL
    for (int i = 0; i < MR; ++i) {
      const T a = V::broadcast(panel + i);
      RA_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul_add(a, b[v], acc[i][v]);
    }
  }
}

// The pixel-lane tile: the chains, stored as out[i][l] (rows i < MR, lanes l < NV * kWidth).
template <class V, int MR, int NV, bool kStridedDepth>
void pixel_tile(const TileArgs& t) {
  constexpr int W = V::kWidth;
  typename V::T acc[MR][NV];
  pixel_chains<V, MR, NV, kStridedDepth>(t, t.base, acc);
  RA_UNROLL
  for (int i = 0; i < MR; ++i) {
    RA_UNROLL
    for (int v = 0; v < NV; ++v) V::store(t.out + i * t.out_stride + v * W, acc[i][v]);
  }
}

// table[vectors - 1][rows - 1] = Tiles::template of<rows, vectors>(), for 1 <= rows <= MaxRows
// and 1 <= vectors <= MaxVectors: the instantiations of one tile template, filled at compile
// time, looked up by shape at run time.
template <class Tiles, int MaxVectors, int MaxRows>
class TileShapeTable {
 public:
  TileShapeTable() { fill<1>(); }
  TileFunction get(int rows, int vectors) const { return table_[vectors - 1][rows - 1]; }

 private:
  template <int NV>
  void fill() {
    fill_rows<NV, 1>();
    if constexpr (NV < MaxVectors) fill<NV + 1>();
  }
  template <int NV, int MR>
  void fill_rows() {
    table_[NV - 1][MR - 1] = Tiles::template of<MR, NV>();
    if constexpr (MR < MaxRows) fill_rows<NV, MR + 1>();
  }
  TileFunction table_[MaxVectors][MaxRows] = {};
};

template <class V, bool kStridedDepth>
struct PixelTiles {
  template <int MR, int NV>
  static constexpr TileFunction of() {
    return &pixel_tile<V, MR, NV, kStridedDepth>;
  }
};

// The table of pixel_tile<V, rows, vectors, strided> for 1 <= rows <= MaxRows and
// 1 <= vectors <= MaxVectors (fewer vectors: the last lanes of a row of output positions).
template <class V, int MaxVectors, int MaxRows>
class PixelTileTable {
 public:
  TileFunction get(bool strided_depth, int rows, int vectors) const {
    return strided_depth ? strided_.get(rows, vectors) : offsets_.get(rows, vectors);
  }

 private:
  TileShapeTable<PixelTiles<V, false>, MaxVectors, MaxRows> offsets_;
  TileShapeTable<PixelTiles<V, true>, MaxVectors, MaxRows> strided_;
};

// The table of tile<V, rows, vectors, grid> for 1 <= vectors <= MaxVectors and
// 1 <= rows <= MaxRows(vectors).
template <class V, int MaxVectors, int (*MaxRows)(int)>
class TileTable {
 public:
  TileTable() { fill<1>(); }
  TileFunction get(bool grid, int rows, int vectors) const {
    return table_[grid ? 1 : 0][vectors - 1][rows - 1];
  }

 private:
  template <int NV>
  void fill() {
    fill_rows<NV, 1>();
    if constexpr (NV < MaxVectors) fill<NV + 1>();
  }
  template <int NV, int MR>
  void fill_rows() {
    static_assert(MR <= kMaxTileRows);
    table_[0][NV - 1][MR - 1] = &tile<V, MR, NV, false>;
    table_[1][NV - 1][MR - 1] = &tile<V, MR, NV, true>;
    if constexpr (MR < MaxRows(NV)) fill_rows<NV, MR + 1>();
  }
  TileFunction table_[2][MaxVectors][kMaxTileRows] = {};
};

}  // namespace ra::backend::cpu::direct_detail
