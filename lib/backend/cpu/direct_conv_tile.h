#pragma once
// The micro-kernel of the direct convolutions (direct_conv.h), written once for every vector
// type. Included only by the variant units direct_conv_{portable,avx2,avx512}.cpp, each of which
// instantiates it with its own vector type V (declared in an anonymous namespace there, so the
// instantiations stay inside that unit) between `#pragma GCC push_options / target(...)`.
//
// V provides: type T, constexpr int kWidth, zero(), load(p), store(p, v), broadcast(p),
// mul_add(a, b, c) = the variant's GEMM step (fma, or a rounded product then a rounded add),
// add(a, b) = a + b.
#include <cstdint>

#include "backend/cpu/direct_conv_kernels.h"

namespace ra::backend::cpu::direct_detail {

// The tile of direct_conv_kernels.h for MR rows and NV vectors, with the row and depth addressing
// of Access. The loop is issue-bound rather than FMA-bound when every broadcast needs its own
// address arithmetic, hence the consecutive-row and strided-depth forms: there a broadcast is one
// instruction with a constant displacement.
template <class V, int MR, int NV, TileAccess Access>
void tile(const TileArgs& t) {
  using T = typename V::T;
  constexpr int W = V::kWidth;
  constexpr bool kConsecutiveRows = Access != TileAccess::gathered;
  constexpr bool kStridedDepth = Access == TileAccess::consecutive_rows_strided_depth;
  std::int64_t rows[MR];
  for (int i = 0; i < MR; ++i) rows[i] = kConsecutiveRows ? i : t.row_offsets[i];
  const float* row_base = kConsecutiveRows ? t.base + t.row_offsets[0] : t.base;

  T acc[MR][NV];
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = t.first || t.add_run ? V::zero() : V::load(t.out + i * t.out_stride + v * W);
    }
  }
  const float* panel = t.panel;
  // Strided depth: the offset of step d, an integer so that no pointer is ever formed past the
  // source (a pointer one stride beyond the last step is undefined behaviour, and GCC -O3 did load
  // through it).
  std::int64_t strided = 0;
  for (std::int64_t d = 0; d < t.depth; ++d, panel += t.panel_stride) {
    const float* source = row_base + (kStridedDepth ? strided : t.depth_offsets[d]);
    if constexpr (kStridedDepth) strided += t.depth_stride;
    T b[NV];
    for (int v = 0; v < NV; ++v) b[v] = V::load(panel + v * W);
    for (int i = 0; i < MR; ++i) {
      const T a = V::broadcast(source + rows[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::mul_add(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      float* out = t.out + i * t.out_stride + v * W;
      if (t.add_run) {  // a sum of runs from +0, in call order (col2im's order of the taps)
        V::store(out, V::add(t.first ? V::zero() : V::load(out), acc[i][v]));
      } else {
        V::store(out, acc[i][v]);
      }
    }
  }
}

// The table of tile<V, rows, vectors, access> for every access, 1 <= vectors <= MaxVectors and
// 1 <= rows <= MaxRows(vectors, access).
template <class V, int MaxVectors, int (*MaxRows)(int, TileAccess)>
class TileTable {
 public:
  TileTable() {
    fill<TileAccess::gathered, 1>();
    fill<TileAccess::consecutive_rows, 1>();
    fill<TileAccess::consecutive_rows_strided_depth, 1>();
  }
  TileFunction get(TileAccess access, int rows, int vectors) const {
    return table_[static_cast<int>(access)][vectors - 1][rows - 1];
  }

 private:
  template <TileAccess Access, int NV>
  void fill() {
    fill_rows<Access, NV, 1>();
    if constexpr (NV < MaxVectors) fill<Access, NV + 1>();
  }
  template <TileAccess Access, int NV, int MR>
  void fill_rows() {
    static_assert(MR <= kMaxTileRows);
    table_[static_cast<int>(Access)][NV - 1][MR - 1] = &tile<V, MR, NV, Access>;
    if constexpr (MR < MaxRows(NV, Access)) fill_rows<Access, NV, MR + 1>();
  }
  TileFunction table_[kTileAccessKinds][MaxVectors][kMaxTileRows] = {};
};

}  // namespace ra::backend::cpu::direct_detail
