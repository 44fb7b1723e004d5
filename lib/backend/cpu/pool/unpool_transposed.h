#pragma once
// The conv output gradient of a fused conv + 2x2/2 max-pool backward (conv2d_backward_maxpool),
// built straight in the layout the filter gradient reads: one image, pixel-major with the
// channels as lanes (dy_t[pixel][channel]), instead of unpooling each plane and transposing the
// image. It is the transposition of unpool_plane_2x2's planes, float for float, and its bias sums
// are plane_sum's, so the fused backward keeps the bits of the separate ops.
//
// Why: per image the plane-major route writes 64 x 576 floats (144 KiB, more than L1 holds), reads
// them back to transpose them and a third time for the bias. Here the pooled gradient (a quarter of
// the floats) is transposed in 16 x 16 register blocks and each 2x2 window is written once, as four
// 16-channel vectors.
#include <cstdint>

#include "backend/cpu/simd/isa.h"
#include "backend/geometry.h"
#include "backend/pool_gradient.h"

namespace ra::backend::cpu {

// dy_t[pixel * stride + c] for the g.h * g.w pixels of the pool's input plane and channels
// c < g.c: image n's input gradient of the 2x2/2 pool g (is_plain_2x2), from its output gradient:
// at the argmax of each window +0 + v (v = dy, or relu_backward(relu_gate, dy) with a gate), +0
// elsewhere, rows and columns no window covers included. Lanes [g.c, stride) are left alone.
// Throws ra::RuntimeFailure for an argmax outside its window. `isa` picks the code
// (avx512-fma: 16 x 16 AVX-512 register transposes; else 4 x 4 SSE2 ones on x86, scalar loops
// elsewhere); the floats are the same.
void unpool_image_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                             float* dy_t, std::int64_t stride, Isa isa);

// sums[c] += plane_sum(the column c of rows[j * stride + c], j < count) for c < channels:
// plane_sum's lanes (element j into lane j % 8, ascending j) and its tree, the channels side by
// side. So the bias gradient summed from dy_t has the bits of the sum over dy's planes. `isa` picks
// the code (16 channels per AVX-512 vector, 8 per AVX2 one, else 4 per SSE2 one); the floats are
// the same.
void add_column_plane_sums(const float* rows, std::int64_t count, std::int64_t stride,
                           std::int64_t channels, float* sums, Isa isa);

namespace unpool_detail {
// The portable code of both, for blocks of channels [c0, c1) and pooled outputs [j0, j1) (the
// AVX-512 code calls it for the edges that do not fill its 16 x 16 blocks).
void unpool_block_transposed(const PoolGeometry& g, const MaxPoolGradient& gradient, std::int64_t n,
                             std::int64_t c0, std::int64_t c1, std::int64_t j0, std::int64_t j1,
                             float* dy_t, std::int64_t stride);
// +0 in lanes [0, g.c) of the pixels no window covers (an odd last row or column).
void zero_uncovered_pixels(const PoolGeometry& g, float* dy_t, std::int64_t stride);
void add_column_plane_sums_portable(const float* rows, std::int64_t count, std::int64_t stride,
                                    std::int64_t c0, std::int64_t c1, float* sums);

// The avx512-fma versions (unpool_transposed_avx512.cpp); callable only where the CPU has
// AVX-512F (isa_supported).
void unpool_image_transposed_avx512(const PoolGeometry& g, const MaxPoolGradient& gradient,
                                    std::int64_t n, float* dy_t, std::int64_t stride);
void add_column_plane_sums_avx512(const float* rows, std::int64_t count, std::int64_t stride,
                                  std::int64_t channels, float* sums);
// The avx2-fma column sums (unpool_transposed_avx2.cpp); callable only where the CPU has AVX2.
void add_column_plane_sums_avx2(const float* rows, std::int64_t count, std::int64_t stride,
                                std::int64_t channels, float* sums);
}  // namespace unpool_detail

}  // namespace ra::backend::cpu
