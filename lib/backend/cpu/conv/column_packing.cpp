#include "backend/cpu/conv/column_packing.h"

#include <algorithm>

#include "backend/cpu/conv/direct_conv.h"

namespace ra::backend::cpu::direct_detail {
namespace {

// Whole columns of kLanes floats: copies of constant size per channel, which the compiler makes a
// few vector moves (with the count known only at run time, each channel's copy is a loop with a
// remainder, and the packing took longer than the image copy it replaced). Plane by plane, so
// that each plane's source is read as one run of consecutive lines: the line prefetcher follows a
// run, where column by column every line was a miss of its own (ResNet29v2's 1x1 64->16 on 32x32,
// forward: 1.47 -> 1.19 ms, one thread, batch 32).
template <int kLanes>
void pack_whole_columns(const float* __restrict__ x_n, std::int64_t channels, std::int64_t plane,
                        std::int64_t position, std::int64_t columns, std::int64_t stride,
                        float* __restrict__ column) {
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* from = x_n + c * plane + position;
    float* to = column + c * kLanes;
    for (std::int64_t i = 0; i < columns; ++i) {
      for (int l = 0; l < kLanes; ++l) to[i * stride + l] = from[i * kLanes + l];
    }
  }
}

// A column of `count` <= lanes positions, of any lane count.
void pack_any_column(const float* x_n, std::int64_t channels, std::int64_t plane,
                     std::int64_t position, std::int64_t lanes, std::int64_t count, float* column) {
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* from = x_n + c * plane + position;
    float* to = column + c * lanes;
    for (std::int64_t l = 0; l < count; ++l) to[l] = from[l];
    for (std::int64_t l = count; l < lanes; ++l) to[l] = 0.0f;
  }
}

}  // namespace

bool packs_columns(const ConvGeometry& g, const PooledGradient* unpooled_x) {
  return unpooled_x == nullptr && g.unpadded_1x1();
}

void pack_columns(const float* x_n, std::int64_t channels, std::int64_t plane,
                  std::int64_t position, std::int64_t columns, std::int64_t lanes,
                  std::int64_t stride, float* column) {
  // The whole columns of the avx2-fma pixel tile's 16 lanes go plane by plane.
  const std::int64_t whole =
      lanes == 16 ? std::clamp<std::int64_t>((plane - position) / lanes, 0, columns) : 0;
  pack_whole_columns<16>(x_n, channels, plane, position, whole, stride, column);
  for (std::int64_t i = whole; i < columns; ++i) {
    const std::int64_t at = position + i * lanes;
    pack_any_column(x_n, channels, plane, at, lanes, std::min(lanes, plane - at),
                    column + i * stride);
  }
}

void pack_column(const float* x_n, std::int64_t channels, std::int64_t plane, std::int64_t position,
                 std::int64_t lanes, float* column) {
  pack_columns(x_n, channels, plane, position, 1, lanes, 0, column);
}

}  // namespace ra::backend::cpu::direct_detail
