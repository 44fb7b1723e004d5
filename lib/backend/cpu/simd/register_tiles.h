#pragma once
// The register tiles of the GEMMs and direct convolutions, per instruction set (internal to
// lib/backend/cpu; direct_conv.cpp drives them, simd/register_tile_templates.h defines them).
//
// A gathered tile computes MR x (NV * width) multiply-add chains: MR "rows" whose scalar operand
// is broadcast from the source (an output pixel's window, or a (c, r, s) tap), and NV vectors
// of "lanes" (filters) read from a packed panel; a pixel tile (below) is the transpose. Each chain
// is the variant's GEMM chain (gemm.h): c = fma(a, b, c) for the FMA variants, c = c + a * b
// (rounded product) for the portable one, over the depth in ascending order -- which is why a
// direct convolution gives the bits of im2col + gemm() of the same variant.
#include <cstdint>

#include "backend/cpu/simd/isa.h"

namespace ra::backend::cpu::direct_detail {

// The epilogue of a storing pixel tile (pixel_store_tile_function): the tile writes the output
// pixels among its lanes straight into row i's NCHW plane, out + i * out_stride, instead of a band
// buffer for store_band (direct_conv_pixel.cpp) to copy: value (+ addend[i]), then relu if relu,
// then relu_backward(gate, value) if gate -- store_band's float operations, so its bits.
struct PixelStore {
  // Per vector of positions (position / width; the tile's first position is a multiple of the
  // width), three entries: the bit mask of its lanes that are output pixels, the mask of as many
  // low bits, and the output pixel of its first such lane (the output lanes of a vector are
  // consecutive output pixels: positions past a row's pixels are skipped, not stored).
  const std::int64_t* vectors = nullptr;
  std::int64_t position = 0;      // the tile's first position
  const float* addend = nullptr;  // row i's at addend[i], or none
  bool relu = false;
  const float* gate = nullptr;  // laid out as the tile's output (row i at gate + i * out_stride)
};
inline constexpr int kPixelStoreEntries = 3;  // entries of PixelStore::vectors per vector

struct TileArgs {
  std::int64_t depth = 0;                       // chain length
  const float* base = nullptr;                  // the broadcast operand's memory
  const std::int64_t* row_offsets = nullptr;    // gathered tiles: one per row
  const std::int64_t* depth_offsets = nullptr;  // one per depth step (unless strided)
  std::int64_t depth_stride = 0;                // strided pixel tiles: depth step d at d * stride
  // Grid gathered tiles: depth step (row, col) at row * depth_row_stride + col * depth_col_stride,
  // depth_cols steps per row (depth a multiple of it).
  std::int64_t depth_cols = 0, depth_row_stride = 0, depth_col_stride = 0;
  // Row-vector storing pixel tiles: vector v's lanes at v * vector_stride from the tile's first
  // (else v * width: consecutive positions).
  std::int64_t vector_stride = 0;
  const float* panel = nullptr;  // [depth][panel_stride], lanes at the start
  std::int64_t panel_stride = 0;
  float* out = nullptr;  // [rows][out_stride]: the chains' start (unless first) and result
  std::int64_t out_stride = 0;
  // The chains continue from out (start from zero if first) and are stored back.
  bool first = true;
  PixelStore store;  // storing pixel tiles only (they start from zero)
  // Dense storing pixel tiles (pixel_dense_store_tile_function): `columns` tiles in one call, the
  // c-th reading its source at base + c * column_stride and storing the NV * width pixels after
  // the (c-1)-th's (packed columns, whose tiles differ only there).
  std::int64_t columns = 1, column_stride = 0;
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
TileLimits tile_limits(Isa isa);

// The rows of each variant's full gathered tile: as many accumulators as the vector registers
// hold beside the NV panel vectors and a broadcast, at most 8 so that the rows' offsets fit in
// general registers (kMaxTileRows, which the tile tables check).
inline constexpr int kMaxTileRows = 8;
constexpr int portable_tile_rows(int) {
  return 4;
}
constexpr int avx2_tile_rows(int vectors) {
  return vectors == 2 ? 6 : 8;
}  // 16 ymm
constexpr int avx512_tile_rows(int vectors) {
  return vectors == 4 ? 6 : 8;
}  // 32 zmm
int tile_rows(Isa isa, int vectors);

// The gathered tile for rows x vectors (1 <= rows <= tile_rows(isa, vectors)); depth through
// depth_offsets, or as a grid (TileArgs::depth_cols) when grid.
TileFunction tile_function(Isa isa, int rows, int vectors, bool grid = false);

// Pixel-lane tiles: the transposed arrangement, for stride-1 convolutions over wide rows. The
// lanes are output pixels, loaded as vectors straight from the source (no table per row); the
// rows are filters or channels, broadcast from a panel packed [tile][depth][rows]. Results come
// out in NCHW order, so nothing is transposed afterwards. The source must stay readable for
// lanes - 1 floats past the source of the last output position (callers pad their copies).
struct PixelTileShape {
  int rows = 0;   // MR
  int lanes = 0;  // NV * width
};
// The register tile of each instruction set, also the tile of its GEMM variant (gemm_kernels.h):
// the GEMMs run on these pixel tiles.
inline constexpr PixelTileShape kPortablePixelTile{4, 8};
inline constexpr PixelTileShape kAvx2PixelTile{6, 16};
inline constexpr PixelTileShape kAvx512PixelTile{8, 48};
PixelTileShape pixel_tile_shape(Isa isa);
// Vectors in a full pixel tile of the variant (lanes / vector width), at most kMaxPixelTileVectors.
inline constexpr int kMaxPixelTileVectors = 4;
int pixel_tile_vectors(Isa isa);
// The tile for `rows` rows (1 <= rows <= pixel_tile_shape(isa).rows) and `vectors` vectors of
// lanes (1 <= vectors <= pixel_tile_vectors(isa); fewer for the last positions of a row, so
// that no full tile is spent on a few lanes); depth addressed by depth_offsets, or by depth_stride
// when strided_depth.
TileFunction pixel_tile_function(Isa isa, bool strided_depth, int rows, int vectors);

// The storing pixel tile for rows x vectors (pixel_tile_function's shapes, depth through
// depth_offsets, chains from zero), or nullptr where the variant has none (it needs masked
// stores: avx512-fma compresses the output lanes, avx2-fma permutes them; the portable variant
// has none). Callers then store bands with store_band.
TileFunction pixel_store_tile_function(Isa isa, int rows, int vectors);
// The same where every lane of every vector is an output pixel and position is pixel (wide rows
// that discard no position: pitch = q, pixels a multiple of the vector width), so that the tile
// reads no PixelStore::vectors entry and takes no masked store; nullptr where the variant has no
// such tile (only avx2-fma has them).
TileFunction pixel_dense_store_tile_function(Isa isa, int rows, int vectors);

// The storing pixel tile whose vectors lie TileArgs::vector_stride apart in the source (whole
// output rows of 8 pixels each, one vector per row segment: no position the output discards is
// computed), for rows x vectors as pixel_store_tile_function; nullptr where the variant has none
// (only avx2-fma has them).
TileFunction pixel_row_store_tile_function(Isa isa, int rows, int vectors);

// Per variant (simd/register_tiles_{portable,avx2,avx512}.cpp).
TileFunction portable_pixel_tile(bool strided_depth, int rows, int vectors);
TileFunction avx2_pixel_tile(bool strided_depth, int rows, int vectors);
TileFunction avx512_pixel_tile(bool strided_depth, int rows, int vectors);
TileFunction avx2_pixel_store_tile(int rows, int vectors, bool dense);
TileFunction avx2_pixel_row_store_tile(int rows, int vectors);
TileFunction avx512_pixel_store_tile(int rows, int vectors);
TileFunction portable_tile(bool grid, int rows, int vectors);
TileFunction avx2_tile(bool grid, int rows, int vectors);
TileFunction avx512_tile(bool grid, int rows, int vectors);

}  // namespace ra::backend::cpu::direct_detail
