#pragma once
// The packed columns of a 1x1 pixel convolution (direct_conv_pixel.cpp): instead of copying the
// image, each tile column (lanes consecutive positions of every channel) is packed into a small
// buffer, column[c * lanes + l], that stays in L1 while every filter tile reads it.
#include <cstdint>

#include "backend/geometry.h"

namespace ra::backend::cpu {
struct PooledGradient;
}

namespace ra::backend::cpu::direct_detail {

// Whether a pixel convolution packs its source a tile column at a time instead of copying the
// image: 1x1 and unpadded, so that the copy would be x itself (its only use, the L1 sets of
// pixel_source, is then better served by packing, with no pass over the whole image through
// memory).
bool packs_columns(const ConvGeometry& g, const PooledGradient* unpooled_x);

// Packs `columns` columns of `lanes` positions from `position` on, the i-th at column + i * stride:
// column[i * stride + c * lanes + l] = x_n[c * plane + position + i * lanes + l], the lanes past
// the plane's last position zero.
void pack_columns(const float* x_n, std::int64_t channels, std::int64_t plane,
                  std::int64_t position, std::int64_t columns, std::int64_t lanes,
                  std::int64_t stride, float* column);

// One column: pack_columns of columns = 1.
void pack_column(const float* x_n, std::int64_t channels, std::int64_t plane, std::int64_t position,
                 std::int64_t lanes, float* column);

}  // namespace ra::backend::cpu::direct_detail
