// The portable tiles of the direct convolutions: 4-float "vectors" as plain arrays (the compiler
// may use SSE for them), c = c + a * b with the product rounded (-ffp-contract=off) -- the chain
// of the portable GEMM.
#include "backend/cpu/simd/register_tile_templates.h"

namespace ra::backend::cpu::direct_detail {
namespace {

struct Portable {
  struct T {
    float lane[4];
  };
  static constexpr int kWidth = 4;
  static T zero() { return T{}; }
  static T load(const float* p) { return T{{p[0], p[1], p[2], p[3]}}; }
  static void store(float* p, T v) {
    for (int l = 0; l < kWidth; ++l) p[l] = v.lane[l];
  }
  // The scalar is read with a relaxed atomic load, which the compiler may not widen: GCC 12 -O3
  // merged the plain loads of one depth step with those of the next into one wider load whose
  // upper half it never used -- and which read past the source on the last step (a crash).
  static T broadcast(const float* p) {
    float v;
    __atomic_load(p, &v, __ATOMIC_RELAXED);
    return T{{v, v, v, v}};
  }
  static T mul_add(T a, T b, T c) {
    T r;
    for (int l = 0; l < kWidth; ++l) r.lane[l] = c.lane[l] + a.lane[l] * b.lane[l];
    return r;
  }
};

}  // namespace

TileFunction portable_pixel_tile(bool strided_depth, int rows, int vectors) {
  static const PixelTileTable<Portable, kPortablePixelTile.lanes / Portable::kWidth,
                              kPortablePixelTile.rows>
      table;
  return table.get(strided_depth, rows, vectors);
}

TileFunction portable_tile(bool grid, int rows, int vectors) {
  static const TileTable<Portable, kPortableTileLimits.max_vectors, portable_tile_rows> table;
  return table.get(grid, rows, vectors);
}

}  // namespace ra::backend::cpu::direct_detail
