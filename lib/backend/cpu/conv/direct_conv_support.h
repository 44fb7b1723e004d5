#pragma once
// Pieces shared by the direct-convolution drivers (internal to lib/backend/cpu): the zero-padded
// image copy, the offsets of kernel taps, and the pixel-lane drivers that direct_conv.cpp
// dispatches stride-1 convolutions to (direct_conv_pixel.cpp).
#include <cstdint>

#include "backend/cpu/conv/direct_conv.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/runtime/prefetch_ahead.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend/geometry.h"
#include "backend/modes.h"
#include "core/thread_pool.h"

namespace ra::backend::cpu::direct_detail {

// The image a forward or filter-gradient tile reads: x itself, or a zero-padded copy when the
// convolution pads (then every read lands inside the copy and padding reads 0, as im2col writes).
struct Source {
  std::int64_t height = 0, width = 0;
  bool padded = false;
};

inline Source source_of(const ConvGeometry& g) {
  if (g.unpadded()) {
    return {g.h, g.w, false};
  }
  return {std::int64_t(g.p - 1) * g.stride_h + g.r, std::int64_t(g.q - 1) * g.stride_w + g.s, true};
}

// dst[c][i][j] = src[c][i - row_shift][j - col_shift] where that lies inside src's [height][width]
// plane, else 0; dst planes are [dst_height][dst_width].
void shifted_copy(const float* src, std::int64_t channels, std::int64_t height, std::int64_t width,
                  std::int64_t row_shift, std::int64_t col_shift, float* dst,
                  std::int64_t dst_height, std::int64_t dst_width);

// Offset of tap (c, r, s) from a window corner of the source, for each tap (c * R + r) * S + s.
void fill_tap_offsets(const ConvGeometry& g, const Source& source, std::int64_t* offsets);

// Stride-1 convolutions with pixel tiles (direct_conv.h): y = act(conv(x, w) (+ bias)), then
// y = relu_backward(relu_gate, y) with a gate (laid out as y); and the deterministic backward
// data, computed as a forward convolution.
// Where a forward convolution max-pools its output (2x2/2: cpu/maxpool_2x2.h) instead of
// storing it: each image's output stays in the worker's buffer, in cache, and only the pooled
// values and their argmax (indices into the unstored [N, K, P, Q] output) are written.
struct PooledOutput {
  PoolGeometry g;
  float* y = nullptr;
  std::int32_t* argmax = nullptr;
};
// With unpooled_x, x is null and each image is unpooled from it (direct_conv.h, PooledGradient).
void pixel_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                        const float* x, const float* w, const float* bias, Activation act,
                        const float* relu_gate, float* y, Isa isa,
                        const PooledOutput* pooled = nullptr,
                        const PooledGradient* unpooled_x = nullptr);
void pixel_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                              const float* dy, const float* w, const float* relu_gate, float* dx,
                              Isa isa, const PooledGradient* pooled_dy = nullptr);

// shifted_copy of image n of a PooledGradient's conv output gradient, unpooled straight into dst:
// false (nothing written) unless the shifts keep the whole image inside dst.
bool unpool_shifted(const PooledGradient& pooled, std::int64_t n, std::int64_t row_shift,
                    std::int64_t col_shift, float* dst, std::int64_t dst_height,
                    std::int64_t dst_width);

// Image n of a PooledGradient's conv output gradient ([planes][H][W], planes = its channels),
// unpooled into the worker's WorkerBuffer::unpooled_gradient (reserve_unpooled before the
// parallel loop).
void reserve_unpooled(ScratchArena& scratch, const PooledGradient& pooled);
const float* unpooled_image(ScratchArena& scratch, int worker, const PooledGradient& pooled,
                            std::int64_t n);

// Adds the pooled gradient, argmax and gate of image n to `ahead` (what unpooling it reads).
void add_pooled_image(PrefetchAhead& ahead, const PooledGradient& pooled, std::int64_t n);

}  // namespace ra::backend::cpu::direct_detail
