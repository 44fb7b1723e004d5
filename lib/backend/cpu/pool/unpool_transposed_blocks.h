#pragma once
// The blocking loop of the register-transposing unpools (internal to unpool_transposed*.cpp):
// one image cut into blocks of kWidth channels x kWidth pooled outputs, each unpooled by a
// vector instruction set's Block; the edges, and any block holding an argmax outside its window,
// by the scalar loop, which names the first bad argmax and throws.
//
// Block provides
//   static constexpr int kWidth;
//   static bool unpool(g, gradient, n, c0, j0, corner, dy_t, stride);
// which unpools channels [c0, c0 + kWidth) x pooled outputs [j0, j0 + kWidth), corner[jj] being
// the flat index in its plane of window j0 + jj's top-left element, and returns false, having
// written nothing, if an argmax of the block lies outside its window.
//
// Every instantiation is by a Block of one translation unit (the AVX-512 one includes this
// header under its target pragma), so no instantiation is shared between code of two
// instruction sets.
#include <cstdint>

#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/pool/unpool_transposed.h"

namespace ra::backend::cpu::unpool_detail {

template <class Block>
void unpool_image_in_blocks(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                            float* dy_t, std::int64_t stride) {
  constexpr int kWidth = Block::kWidth;
  const std::int64_t pooled = pooled_size(g);
  const std::int64_t whole_channels = g.c / kWidth * kWidth;
  const std::int64_t whole_outputs = pooled / kWidth * kWidth;
  zero_uncovered_pixels(g, dy_t, stride);
  for (std::int64_t j0 = 0; j0 < whole_outputs; j0 += kWidth) {
    alignas(64) std::int32_t corner[kWidth];
    for (int jj = 0; jj < kWidth; ++jj) {
      const std::int64_t j = j0 + jj;
      corner[jj] = static_cast<std::int32_t>(2 * (j / g.q) * g.w + 2 * (j % g.q));
    }
    for (std::int64_t c0 = 0; c0 < whole_channels; c0 += kWidth) {
      if (!Block::unpool(g, gradient, n, c0, j0, corner, dy_t, stride)) {
        unpool_block_transposed(g, gradient, n, c0, c0 + kWidth, j0, j0 + kWidth, dy_t, stride);
      }
    }
    if (whole_channels < g.c) {
      unpool_block_transposed(g, gradient, n, whole_channels, g.c, j0, j0 + kWidth, dy_t, stride);
    }
  }
  if (whole_outputs < pooled) {
    unpool_block_transposed(g, gradient, n, 0, g.c, whole_outputs, pooled, dy_t, stride);
  }
}

}  // namespace ra::backend::cpu::unpool_detail
