// Dispatch of the direct-convolution tiles to the variant units.
#include "backend/cpu/simd/register_tiles.h"

#include <stdexcept>

namespace ra::backend::cpu::direct_detail {

TileLimits tile_limits(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable:
      return kPortableTileLimits;
    case GemmKernel::avx2_fma:
      return kAvx2TileLimits;
    case GemmKernel::avx512_fma:
      return kAvx512TileLimits;
  }
  throw std::logic_error("tile_limits: unknown GEMM kernel");
}

int tile_rows(GemmKernel kernel, int vectors) {
  switch (kernel) {
    case GemmKernel::portable:
      return portable_tile_rows(vectors);
    case GemmKernel::avx2_fma:
      return avx2_tile_rows(vectors);
    case GemmKernel::avx512_fma:
      return avx512_tile_rows(vectors);
  }
  throw std::logic_error("tile_rows: unknown GEMM kernel");
}

TileFunction tile_function(GemmKernel kernel, int rows, int vectors, bool grid) {
  if (vectors < 1 || vectors > tile_limits(kernel).max_vectors || rows < 1 ||
      rows > tile_rows(kernel, vectors)) {
    throw std::logic_error("direct convolution: no tile of this shape");
  }
  switch (kernel) {
    case GemmKernel::portable:
      return portable_tile(grid, rows, vectors);
    case GemmKernel::avx2_fma:
      return avx2_tile(grid, rows, vectors);
    case GemmKernel::avx512_fma:
      return avx512_tile(grid, rows, vectors);
  }
  throw std::logic_error("direct convolution: unknown GEMM kernel");
}

PixelTileShape pixel_tile_shape(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable:
      return kPortablePixelTile;
    case GemmKernel::avx2_fma:
      return kAvx2PixelTile;
    case GemmKernel::avx512_fma:
      return kAvx512PixelTile;
  }
  throw std::logic_error("pixel_tile_shape: unknown GEMM kernel");
}

static_assert(kPortablePixelTile.lanes / kPortableTileLimits.width <= kMaxPixelTileVectors &&
              kAvx2PixelTile.lanes / kAvx2TileLimits.width <= kMaxPixelTileVectors &&
              kAvx512PixelTile.lanes / kAvx512TileLimits.width <= kMaxPixelTileVectors);

int pixel_tile_vectors(GemmKernel kernel) {
  return pixel_tile_shape(kernel).lanes / tile_limits(kernel).width;
}

TileFunction pixel_tile_function(GemmKernel kernel, bool strided_depth, int rows, int vectors) {
  if (rows < 1 || rows > pixel_tile_shape(kernel).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(kernel)) {
    throw std::logic_error("direct convolution: no pixel tile of this shape");
  }
  switch (kernel) {
    case GemmKernel::portable:
      return portable_pixel_tile(strided_depth, rows, vectors);
    case GemmKernel::avx2_fma:
      return avx2_pixel_tile(strided_depth, rows, vectors);
    case GemmKernel::avx512_fma:
      return avx512_pixel_tile(strided_depth, rows, vectors);
  }
  throw std::logic_error("direct convolution: unknown GEMM kernel");
}

TileFunction pixel_store_tile_function(GemmKernel kernel, int rows, int vectors) {
  if (kernel != GemmKernel::avx512_fma) return nullptr;
  if (rows < 1 || rows > pixel_tile_shape(kernel).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(kernel)) {
    throw std::logic_error("direct convolution: no storing pixel tile of this shape");
  }
  return avx512_pixel_store_tile(rows, vectors);
}

}  // namespace ra::backend::cpu::direct_detail
