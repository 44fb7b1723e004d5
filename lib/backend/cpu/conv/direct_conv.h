#pragma once
// Direct convolutions: the three conv2d GEMMs computed straight from the images, with no column
// matrix (im2col.h) and no packing of it. Two register tiles (simd/register_tiles.h):
//
//   pixel tiles (stride 1): lanes = consecutive output positions over "wide rows" (every column
//   of the source, the extra ones discarded), loaded as vectors from the zero-padded image copy;
//   rows = filters or channels, broadcast from a small packed panel. Results land in NCHW order.
//   (avx2-fma, where output rows are whole vectors and the wide rows would compute positions the
//   output discards, e.g. the 3x3 convs on 8x8 and 16x16: lanes are those row vectors instead.)
//     forward          rows = filters k,   depth = taps (c, r, s) through an offset table
//     backward data    the forward convolution of dy_n zero-padded by R-1 - pad with the
//                      filters transposed and flipped: rows = channels c, depth = (k, r, s)
//   gathered tiles: rows broadcast from the source through a table of offsets, lanes = filters
//   read from a packed panel.
//     forward, strided rows = output pixels, depth = taps; results transposed into NCHW
//     backward filter  rows = taps (c, r, s), depth = output pixels, panel = dy_n^T [PQ][K]
//
// Bits: every chain is the chain that im2col + gemm() computes for the same GEMM variant, element
// for element and in the same order -- forward: one chain over (c, r, s) ascending, then + bias;
// backward filter: chains over (image, p, q) ascending into the chunk's partial; backward data:
// the forward chain of its transposed convolution, over (k, R-1 - r, S-1 - s) ascending, i.e.
// im2col + gemm() of that convolution (not gemm() + col2im, which adds the taps one by one: the
// GEMM path that strided and nondeterministic backward data take). Padding reads zeros from a
// padded copy, which is what the column matrix holds there (a product with 0 added to a chain
// changes nothing but a -0 into +0, as it does in the GEMM). So a direct convolution returns
// exactly the bits of its im2col + gemm() twin (tested), for any thread count.
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend/geometry.h"
#include "backend/modes.h"
#include "backend/pool_gradient.h"
#include "core/thread_pool.h"

namespace ra::backend::cpu {

// y = act(conv(x, w) (+ bias[k])); all images, parallel over images. The bias and the
// activation are applied as each band of results is stored (cpu/activation.h).
void direct_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                         const float* x, const float* w, const float* bias, Activation act,
                         float* y, Isa isa);

// Whether direct_conv_forward_maxpool applies: a stride-1 conv whose output the 2x2/2 pool
// (cpu/maxpool_2x2.h) covers as maxpool2d_forward would.
bool fuses_maxpool(const ConvGeometry& g, const PoolGeometry& pool);
// y, argmax = maxpool(act(conv(x, w) (+ bias))) as direct_conv_forward then maxpool2d_forward
// give them, without storing the conv output: each image's stays in the worker's cache.
void direct_conv_forward_maxpool(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                 const float* x, const float* w, const float* bias, Activation act,
                                 const PoolGeometry& pool_g, float* y, std::int32_t* argmax,
                                 Isa isa);

// A conv output gradient given as what the backward of the 2x2/2 max-pool over that output
// (fuses_maxpool) reads: the gradient ops below that take one unpool each image's gradient into
// the worker's buffer (unpool_plane_2x2) as they need it, instead of reading a stored dy:
// maxpool2d_backward's values, never written whole.
struct PooledGradient {
  PoolGeometry g;
  MaxPoolGradient gradient;  // the pool output's gradient, its argmax and gate
};

// dw = sum over images and output pixels of dy * x, in either reduction mode (reduction.h); with
// pooled_dy, dy is null. With db (else null), also db[k] = the bias gradient, summed from each dy
// image while it is in cache for dw: conv_bias_gradient's bits, when fuses_bias_gradient(g) (the
// same chunk plan).
void direct_conv_backward_filter(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                 const float* x, const float* dy, float* dw, float* db,
                                 KernelMode mode, Isa isa,
                                 const PooledGradient* pooled_dy = nullptr);
// Whether the filter gradient's chunk plan is the bias gradient's, so that summing db inside
// direct_conv_backward_filter gives conv_bias_gradient's bits.
bool fuses_bias_gradient(const ConvGeometry& g);
// db[k] = sum over images and output pixels of dy[n, k], alone: per chunk of images (plan_chunks
// over a [K] result), images in order, each plane by plane_sum; chunks added in chunk order.
void conv_bias_gradient(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                        const float* dy, float* db, KernelMode mode);

// Whether g is a strided 1x1 conv without padding, whose forward pass and deterministic backward
// data run as the stride-1 conv of its input subsampled at the output pixels (subsampled_geometry):
// the same floats in every chain, read from a compact copy by pixel tiles instead of every
// stride-th float by gathered tiles through a table (then a transposition of each band), and
// instead of gemm() + col2im. (The filter gradient keeps its gathered tiles over the strided
// input: subsampled, ResNet29v2's four strided convs took as long in all.)
bool is_subsampled_1x1(const ConvGeometry& g);
ConvGeometry subsampled_geometry(const ConvGeometry& g);

// dx = the backward data of a strided 1x1 conv (is_subsampled_1x1), deterministic: the stride-1
// backward data of the subsampled conv, each value scattered to its pixel as +0 + value (what
// col2im's sum from 0 gives), +0 at the pixels no output reads; as gemm() + col2im, the same bits.
// With relu_gate (laid out as dx), dx = relu_backward(relu_gate, dx), applied to each row as its
// values are scattered (the gemm() + col2im route gates in a pass of its own).
void subsampled_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                   const float* dy, const float* w, const float* relu_gate,
                                   float* dx, Isa isa);

// Whether direct_conv_backward_data handles g: stride 1, with any padding (the zero-padded dy
// copy is shifted by R-1 - pad, S-1 - pad, which shifted_copy takes of either sign; tested with
// padding at and beyond the kernel size). Strided geometries go through gemm() + col2im.
bool direct_backward_data_applies(const ConvGeometry& g);

// dx = conv_transpose(dy, w), deterministic: one image per task; with relu_gate (same layout as
// dx), dx = relu_gate > 0 ? dx : 0 as each band is stored. With pooled_dy, dy is null.
void direct_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                               const float* dy, const float* w, const float* relu_gate, float* dx,
                               Isa isa, const PooledGradient* pooled_dy = nullptr);

}  // namespace ra::backend::cpu
