// Dispatch of the direct-convolution tiles to the variant units.
#include "backend/cpu/simd/register_tiles.h"

#include <stdexcept>

namespace ra::backend::cpu::direct_detail {

TileLimits tile_limits(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return kPortableTileLimits;
    case Isa::avx2_fma:
      return kAvx2TileLimits;
    case Isa::avx512_fma:
      return kAvx512TileLimits;
  }
  throw std::logic_error("tile_limits: unknown instruction set");
}

int tile_rows(Isa isa, int vectors) {
  switch (isa) {
    case Isa::portable:
      return portable_tile_rows(vectors);
    case Isa::avx2_fma:
      return avx2_tile_rows(vectors);
    case Isa::avx512_fma:
      return avx512_tile_rows(vectors);
  }
  throw std::logic_error("tile_rows: unknown instruction set");
}

TileFunction tile_function(Isa isa, int rows, int vectors, bool grid) {
  if (vectors < 1 || vectors > tile_limits(isa).max_vectors || rows < 1 ||
      rows > tile_rows(isa, vectors)) {
    throw std::logic_error("direct convolution: no tile of this shape");
  }
  switch (isa) {
    case Isa::portable:
      return portable_tile(grid, rows, vectors);
    case Isa::avx2_fma:
      return avx2_tile(grid, rows, vectors);
    case Isa::avx512_fma:
      return avx512_tile(grid, rows, vectors);
  }
  throw std::logic_error("direct convolution: unknown instruction set");
}

PixelTileShape pixel_tile_shape(Isa isa) {
  switch (isa) {
    case Isa::portable:
      return kPortablePixelTile;
    case Isa::avx2_fma:
      return kAvx2PixelTile;
    case Isa::avx512_fma:
      return kAvx512PixelTile;
  }
  throw std::logic_error("pixel_tile_shape: unknown instruction set");
}

static_assert(kPortablePixelTile.lanes / kPortableTileLimits.width <= kMaxPixelTileVectors &&
              kAvx2PixelTile.lanes / kAvx2TileLimits.width <= kMaxPixelTileVectors &&
              kAvx512PixelTile.lanes / kAvx512TileLimits.width <= kMaxPixelTileVectors);

int pixel_tile_vectors(Isa isa) {
  return pixel_tile_shape(isa).lanes / tile_limits(isa).width;
}

TileFunction pixel_tile_function(Isa isa, bool strided_depth, int rows, int vectors) {
  if (rows < 1 || rows > pixel_tile_shape(isa).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(isa)) {
    throw std::logic_error("direct convolution: no pixel tile of this shape");
  }
  switch (isa) {
    case Isa::portable:
      return portable_pixel_tile(strided_depth, rows, vectors);
    case Isa::avx2_fma:
      return avx2_pixel_tile(strided_depth, rows, vectors);
    case Isa::avx512_fma:
      return avx512_pixel_tile(strided_depth, rows, vectors);
  }
  throw std::logic_error("direct convolution: unknown instruction set");
}

TileFunction pixel_store_tile_function(Isa isa, int rows, int vectors) {
  if (isa == Isa::portable) return nullptr;
  if (rows < 1 || rows > pixel_tile_shape(isa).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(isa)) {
    throw std::logic_error("direct convolution: no storing pixel tile of this shape");
  }
  return isa == Isa::avx2_fma ? avx2_pixel_store_tile(rows, vectors, false)
                              : avx512_pixel_store_tile(rows, vectors);
}

TileFunction pixel_dense_store_tile_function(Isa isa, int rows, int vectors) {
  if (isa != Isa::avx2_fma) return nullptr;
  if (rows < 1 || rows > pixel_tile_shape(isa).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(isa)) {
    throw std::logic_error("direct convolution: no storing pixel tile of this shape");
  }
  return avx2_pixel_store_tile(rows, vectors, true);
}

TileFunction pixel_row_store_tile_function(Isa isa, int rows, int vectors) {
  if (isa != Isa::avx2_fma) return nullptr;
  if (rows < 1 || rows > pixel_tile_shape(isa).rows || vectors < 1 ||
      vectors > pixel_tile_vectors(isa)) {
    throw std::logic_error("direct convolution: no row-vector pixel tile of this shape");
  }
  return avx2_pixel_row_store_tile(rows, vectors);
}

}  // namespace ra::backend::cpu::direct_detail
