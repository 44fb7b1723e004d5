#pragma once
// The register tiles of the direct convolutions, per GEMM variant (internal to lib/backend/cpu;
// direct_conv.cpp drives them, direct_conv_tile.h defines them).
//
// A tile computes MR x (NV * width) multiply-add chains: MR "rows" whose scalar operand is
// broadcast from the source (an input pixel, or a (c, r, s) tap of it), and NV vectors of
// "lanes" (filters or channels) read from a packed panel. Each chain is the variant's GEMM chain
// (gemm.h): c = fma(a, b, c) for the FMA variants, c = c + a * b (rounded product) for the
// portable one, over the depth in ascending order -- which is why a direct convolution gives the
// bits of im2col + gemm() of the same variant.
#include <cstdint>

#include "backend/cpu/gemm.h"

namespace ra::backend::cpu::direct_detail {

// How a tile addresses its broadcast operand: step d of row i reads base + row(i) + depth(d).
enum class TileAccess : int {
  gathered,                        // row(i) = row_offsets[i], depth(d) = depth_offsets[d]
  consecutive_rows,                // row(i) = row_offsets[0] + i, depth(d) = depth_offsets[d]
  consecutive_rows_strided_depth,  // row(i) = row_offsets[0] + i, depth(d) = d * depth_stride
};
inline constexpr int kTileAccessKinds = 3;

struct TileArgs {
  std::int64_t depth = 0;                       // chain length
  const float* base = nullptr;                  // the broadcast operand's memory
  const std::int64_t* row_offsets = nullptr;    // see TileAccess
  const std::int64_t* depth_offsets = nullptr;  // see TileAccess
  std::int64_t depth_stride = 0;                // see TileAccess
  const float* panel = nullptr;                 // [depth][panel_stride], lanes at the start
  std::int64_t panel_stride = 0;
  float* out = nullptr;  // [rows][out_stride]: the chains' start (unless first) and result
  std::int64_t out_stride = 0;
  // Chain mode: the chains continue from out (start from zero if first) and are stored back.
  // Run mode (add_run): the chains start from zero and are added to out: out = (first ? +0 : out)
  // + chain -- backward data adds its kernel taps so, in col2im's order.
  bool first = true;
  bool add_run = false;
};

using TileFunction = void (*)(const TileArgs&);

// The shape limits of a variant's tiles.
struct TileLimits {
  int width = 0;        // floats per vector
  int max_vectors = 0;  // NV <= max_vectors
};
inline constexpr TileLimits kPortableTileLimits{4, 2};
inline constexpr TileLimits kAvx2TileLimits{8, 2};
inline constexpr TileLimits kAvx512TileLimits{16, 4};
TileLimits tile_limits(GemmKernel kernel);

// The rows of each variant's full tile: as many accumulators as the vector registers hold
// beside the NV panel vectors and a broadcast. Gathered rows keep their offsets in general
// registers, so at most 8 of them.
inline constexpr int kMaxTileRows = 12;
constexpr int portable_tile_rows(int, TileAccess) { return 4; }
constexpr int avx2_tile_rows(int vectors, TileAccess access) {  // 16 ymm
  return vectors == 2 ? 6 : (access == TileAccess::gathered ? 8 : 12);
}
constexpr int avx512_tile_rows(int vectors, TileAccess access) {  // 32 zmm
  return vectors == 4 ? 6 : vectors == 3 ? 8 : (access == TileAccess::gathered ? 8 : 12);
}
int tile_rows(GemmKernel kernel, int vectors, TileAccess access);

// The most floats a tile holds (rows x lanes), for callers that buffer one.
inline constexpr int kMaxTileFloats = kMaxTileRows * 64;

// The tile function for rows x vectors (1 <= rows <= tile_rows(kernel, vectors, access)).
TileFunction tile_function(GemmKernel kernel, TileAccess access, int rows, int vectors);

// Per variant (direct_conv_{portable,avx2,avx512}.cpp).
TileFunction portable_tile(TileAccess access, int rows, int vectors);
TileFunction avx2_tile(TileAccess access, int rows, int vectors);
TileFunction avx512_tile(TileAccess access, int rows, int vectors);

}  // namespace ra::backend::cpu::direct_detail
