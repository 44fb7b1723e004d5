// The direct convolutions of direct_conv.h: dispatch (stride 1 goes to the pixel tiles of
// direct_conv_pixel.cpp), the strided forward pass and the filter gradient with gathered tiles.
#include "backend/cpu/conv/direct_conv.h"

#include <algorithm>
#include <cstdint>

#include "backend/cpu/activation.h"
#include "backend/cpu/conv/direct_conv_support.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/pool/unpool_transposed.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "backend/cpu/runtime/prefetch_ahead.h"
#include "backend/cpu/simd/register_tiles.h"
#include "backend/cpu/simd/transpose.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

using direct_detail::Source;
using direct_detail::source_of;
using direct_detail::TileArgs;
using direct_detail::TileFunction;
using direct_detail::TileLimits;

// The lanes of a call (filters or channels) padded to whole vectors and walked in blocks of at
// most max_vectors vectors; the padding lanes of a panel are zero and their results discarded.
struct Lanes {
  std::int64_t count = 0, padded = 0;
  int width = 0, max_vectors = 0;

  Lanes(std::int64_t count_, const TileLimits& limits)
      : count(count_),
        padded(round_up(count_, limits.width)),
        width(limits.width),
        max_vectors(limits.max_vectors) {}
  std::int64_t block() const { return std::int64_t(max_vectors) * width; }
  int vectors_at(std::int64_t lane0) const {
    return static_cast<int>(std::min<std::int64_t>(max_vectors, (padded - lane0) / width));
  }
};

// Depth steps per pass over a panel: ~24 KiB of panel, so it stays in L1 while every tile of the
// pass reads it (the tiles' chains are stored and reloaded between passes: exact).
std::int64_t depth_block(int vectors, int width) {
  return std::max<std::int64_t>(16, 6144 / (std::int64_t(vectors) * width));
}

// Output pixels per band of the strided forward pass: a band's chains are finished, then
// transposed into y while they are in L1. About 48 (three cache lines of each output row), in
// whole tiles of every lane block.
std::int64_t rows_per_band(Isa isa, const Lanes& lanes) {
  std::int64_t band = 48;
  for (std::int64_t lane0 = 0; lane0 < lanes.padded; lane0 += lanes.block()) {
    band = round_up(band, direct_detail::tile_rows(isa, lanes.vectors_at(lane0)));
  }
  return band;
}

// The gathered tiles of one lane-block width, by row count, looked up once per op: run_tiles runs
// per image (or band) and depth block, and a lookup checks the shape and goes through a
// function-local table.
struct TileSet {
  int vectors = 0, full_rows = 0;
  TileFunction by_rows[direct_detail::kMaxTileRows + 1] = {};  // [n]: the tile of n rows

  TileSet(Isa isa, int vectors_, bool grid)
      : vectors(vectors_), full_rows(direct_detail::tile_rows(isa, vectors_)) {
    for (int n = 1; n <= full_rows; ++n) {
      by_rows[n] = direct_detail::tile_function(isa, n, vectors, grid);
    }
  }
};

// The first lane of the last lane block (0 for no lanes: then no tile runs, and `last` is a
// valid shape all the same).
std::int64_t last_block(const Lanes& lanes) {
  return std::max<std::int64_t>(0, lanes.padded - 1) / lanes.block() * lanes.block();
}

// The TileSets of the lane blocks of a call: every block is max_vectors wide but the last, which
// may be narrower.
struct BlockTiles {
  TileSet wide, last;

  BlockTiles(Isa isa, const Lanes& lanes, bool grid)
      : wide(isa, lanes.max_vectors, grid),
        last(isa, std::max(1, lanes.vectors_at(last_block(lanes))), grid) {}
  const TileSet& of(int vectors) const { return vectors == last.vectors ? last : wide; }
};

// The tiles over rows [0, rows) of one lane block and one depth range. `args` addresses row 0.
// With `ahead`, a step of it after each tile. One copy of the arguments (some 20 words) serves
// every tile: copied per tile, they cost a few percent of a short tile's time.
void run_tiles(const TileSet& tiles, std::int64_t rows, const TileArgs& args,
               PrefetchAhead* ahead = nullptr) {
  TileArgs t = args;
  for (std::int64_t i0 = 0; i0 < rows; i0 += tiles.full_rows) {
    const int n = static_cast<int>(std::min<std::int64_t>(tiles.full_rows, rows - i0));
    t.row_offsets = args.row_offsets + i0;
    t.out = args.out + i0 * args.out_stride;
    tiles.by_rows[n](t);
    if (ahead != nullptr) ahead->step();
  }
}

// Zeroes lanes [count, padded) of each of `rows` rows of a [rows][padded] panel.
void zero_padding_lanes(float* panel, std::int64_t rows, const Lanes& lanes) {
  if (lanes.padded == lanes.count) return;
  for (std::int64_t i = 0; i < rows; ++i) {
    std::fill(panel + i * lanes.padded + lanes.count, panel + (i + 1) * lanes.padded, 0.0f);
  }
}

std::size_t source_floats(const ConvGeometry& g, const Source& source) {
  return source.padded ? static_cast<std::size_t>(g.c * source.height * source.width) : 0;
}

const float* source_image(const ConvGeometry& g, const Source& source, const float* x_image,
                          ScratchArena& scratch, int worker) {
  if (!source.padded) return x_image;
  float* copy = scratch.worker(worker, WorkerBuffer::padded_image, source_floats(g, source));
  direct_detail::shifted_copy(x_image, g.c, g.h, g.w, g.pad_top, g.pad_left, copy, source.height,
                              source.width);
  return copy;
}

// Offset of output pixel (p, q)'s window corner in the source, for each pixel p * Q + q.
void fill_pixel_offsets(const ConvGeometry& g, const Source& source, std::int64_t* offsets) {
  for (std::int64_t p = 0; p < g.p; ++p) {
    for (std::int64_t q = 0; q < g.q; ++q) {
      offsets[p * g.q + q] = p * g.stride_h * source.width + q * g.stride_w;
    }
  }
}

// The blocks of an image's filter gradient: fn(lane0, vectors, p0, rows) for each lane block and
// each depth block of whole output rows (about 96 pixels, so that a block of the dy_t panel stays
// in L1).
template <class Fn>
void for_each_filter_block(const ConvGeometry& g, const Lanes& lanes, const Fn& fn) {
  for (std::int64_t lane0 = 0; lane0 < lanes.padded; lane0 += lanes.block()) {
    const int vectors = lanes.vectors_at(lane0);
    const std::int64_t block_rows =
        std::max<std::int64_t>(1, depth_block(vectors, lanes.width) / g.q);
    for (std::int64_t p0 = 0; p0 < g.p; p0 += block_rows) {
      fn(lane0, vectors, p0, std::min(block_rows, std::int64_t(g.p) - p0));
    }
  }
}

// Adds one image's filter gradient into partial [CRS][K padded]: rows = taps (gathered), lanes =
// filters, depth = the output pixels in ascending order (dy_t's rows), block by block; `ahead`
// takes a step after each tile. With fresh, partial holds no sums yet: the first depth block's
// chains start from zero (the bits of starting from a zeroed partial) and overwrite it.
void accumulate_filter_image(const ConvGeometry& g, const Source& source, const BlockTiles& tiles,
                             const Lanes& lanes, const float* src, const float* dy_t,
                             const std::int64_t* tap_offsets, float* partial, bool fresh,
                             PrefetchAhead& ahead) {
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s;
  for_each_filter_block(g, lanes,
                        [&](std::int64_t lane0, int vectors, std::int64_t p0, std::int64_t rows) {
                          TileArgs t;
                          t.depth = rows * g.q;
                          t.base = src + p0 * g.stride_h * source.width;
                          t.row_offsets = tap_offsets;
                          t.depth_cols = g.q;
                          t.depth_row_stride = g.stride_h * source.width;
                          t.depth_col_stride = g.stride_w;
                          t.panel = dy_t + p0 * g.q * lanes.padded + lane0;
                          t.panel_stride = lanes.padded;
                          t.out = partial + lane0;
                          t.out_stride = lanes.padded;
                          t.first = fresh && p0 == 0;
                          run_tiles(tiles.of(vectors), taps, t, &ahead);
                        });
}

// dy_t[pixel * stride + k] = dy_n[k * pixels + pixel], in AVX2 blocks for the avx2-fma variant
// (copies: the same floats).
void transpose_dy(const float* dy_n, std::int64_t filters, std::int64_t pixels, float* dy_t,
                  std::int64_t stride, Isa isa) {
  if (isa == Isa::avx2_fma) {
    transpose_into_avx2(dy_n, pixels, filters, pixels, dy_t, stride);
  } else {
    transpose_into(dy_n, pixels, filters, pixels, dy_t, stride);
  }
}

// The tile calls of accumulate_filter_image per image.
std::int64_t filter_tile_calls(const ConvGeometry& g, const BlockTiles& tiles, const Lanes& lanes) {
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s;
  std::int64_t calls = 0;
  for_each_filter_block(g, lanes, [&](std::int64_t, int vectors, std::int64_t, std::int64_t) {
    const int rows = tiles.of(vectors).full_rows;
    calls += ceil_div(taps, rows);
  });
  return calls;
}

// xs[n][c][p][q] = x[n][c][p * stride_h][q * stride_w] for a strided 1x1 conv g, in the shared
// SharedBuffer::subsampled.
const float* subsample_input(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                             const float* x) {
  const std::int64_t planes = std::int64_t(g.n) * g.c, plane = std::int64_t(g.p) * g.q;
  float* xs = scratch.shared(SharedBuffer::subsampled, static_cast<std::size_t>(planes * plane));
  parallel_for(pool, g.n, [&](std::int64_t n, int) {
    for (std::int64_t c = n * g.c; c < (n + 1) * g.c; ++c) {
      const float* from = x + c * g.h * g.w;
      float* to = xs + c * plane;
      for (std::int64_t p = 0; p < g.p; ++p) {
        const float* row = from + p * g.stride_h * g.w;
        for (std::int64_t q = 0; q < g.q; ++q) to[p * g.q + q] = row[q * g.stride_w];
      }
    }
  });
  return xs;
}

// Whether the filter gradient of g runs with its operands swapped: a stride-1, unpadded 1x1 conv
// of at most half as many channels as filters. Its dW[k][c] = sum over images and pixels of
// dy[k] * x[c] is the filter gradient of the conv from K channels (dy as input) to C filters (x as
// its output gradient), transposed: the tiles then broadcast dy and read x pixel-major, so it is x,
// C floats a pixel, that each image transposes, not dy's K (1x1 16->64 on 32x32: the transposition
// of dy and the bias sums over it took as long as the tiles; 25% faster swapped. At twice as many
// filters as channels, 64->128 on 16x16 and 128->256 on 8x8, 9% and 4% faster once the swapped
// pass summed db four planes at a time; no clear difference before.)
bool swaps_filter_operands(const ConvGeometry& g) {
  return g.unpadded_1x1() && g.stride_h == 1 && g.stride_w == 1 && 2 * g.c <= g.k;
}

}  // namespace

bool is_subsampled_1x1(const ConvGeometry& g) {
  return g.unpadded_1x1() && (g.stride_h > 1 || g.stride_w > 1);
}

ConvGeometry subsampled_geometry(const ConvGeometry& g) {
  ConvGeometry u = g;
  u.h = g.p;
  u.w = g.q;
  u.stride_h = 1;
  u.stride_w = 1;
  return u;
}

void subsampled_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                   const float* dy, const float* w, const float* relu_gate,
                                   float* dx, Isa isa) {
  const ConvGeometry u = subsampled_geometry(g);
  const std::int64_t planes = std::int64_t(g.n) * g.c, plane = std::int64_t(g.p) * g.q;
  const std::int64_t image_plane = std::int64_t(g.h) * g.w;
  float* dxs = scratch.shared(SharedBuffer::subsampled, static_cast<std::size_t>(planes * plane));
  direct_detail::pixel_conv_backward_data(pool, scratch, u, dy, w, nullptr, dxs, isa);
  parallel_for(pool, g.n, [&](std::int64_t n, int) {
    for (std::int64_t c = n * g.c; c < (n + 1) * g.c; ++c) {
      const float* from = dxs + c * plane;
      float* to = dx + c * image_plane;
      const float* gate = relu_gate == nullptr ? nullptr : relu_gate + c * image_plane;
      // relu_backward(gate, +0) is +0 on the rows no output reads: only the read rows are gated,
      // each by the vectorised pass while it is in L1 (a select per value as it is scattered
      // compiled to a branch on the gate's sign, which mispredicted).
      std::fill_n(to, image_plane, 0.0f);
      for (std::int64_t p = 0; p < g.p; ++p) {
        float* row = to + p * g.stride_h * g.w;
        for (std::int64_t q = 0; q < g.q; ++q) row[q * g.stride_w] = 0.0f + from[p * g.q + q];
        if (gate != nullptr) relu_backward(gate + (row - to), row, row, g.w);
      }
    }
  });
}

void direct_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                         const float* x, const float* w, const float* bias, Activation act,
                         float* y, Isa isa) {
  if (g.stride_h == 1 && g.stride_w == 1) {
    direct_detail::pixel_conv_forward(pool, scratch, g, x, w, bias, act, nullptr, y, isa);
    return;
  }
  if (is_subsampled_1x1(g)) {
    direct_detail::pixel_conv_forward(pool, scratch, subsampled_geometry(g),
                                      subsample_input(pool, scratch, g, x), w, bias, act, nullptr,
                                      y, isa);
    return;
  }
  // Strided: rows are the output pixels, gathered through a table of window corners.
  const Lanes lanes(g.k, direct_detail::tile_limits(isa));
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  const Source source = source_of(g);

  // w^T [CRS][K]: a depth step of a tile reads its filters as consecutive lanes.
  float* panel =
      scratch.shared(SharedBuffer::packed_weights, static_cast<std::size_t>(taps * lanes.padded));
  transpose_into(w, taps, g.k, taps, panel, lanes.padded);
  zero_padding_lanes(panel, taps, lanes);
  std::int64_t* pixel_offsets =
      scratch.shared(SharedIndexBuffer::pixel_offsets, static_cast<std::size_t>(pixels));
  fill_pixel_offsets(g, source, pixel_offsets);
  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::tap_offsets, static_cast<std::size_t>(taps));
  direct_detail::fill_tap_offsets(g, source, tap_offsets);
  const std::int64_t band_rows = rows_per_band(isa, lanes);
  const BlockTiles tiles(isa, lanes, false);

  scratch.reserve_workers(WorkerBuffer::padded_image, source_floats(g, source));
  const auto band_floats = static_cast<std::size_t>(band_rows * lanes.padded);
  scratch.reserve_workers(WorkerBuffer::result_band, band_floats);
  parallel_for(pool, g.n, [&](std::int64_t n, int worker) {
    const float* src = source_image(g, source, x + n * image, scratch, worker);
    float* result = scratch.worker(worker, WorkerBuffer::result_band, band_floats);
    float* y_n = y + n * g.k * pixels;
    for (std::int64_t p0 = 0; p0 < pixels; p0 += band_rows) {
      const std::int64_t rows = std::min(band_rows, pixels - p0);
      for (std::int64_t lane0 = 0; lane0 < lanes.padded; lane0 += lanes.block()) {
        const int vectors = lanes.vectors_at(lane0);
        const std::int64_t step = depth_block(vectors, lanes.width);
        for (std::int64_t d0 = 0; d0 < taps; d0 += step) {
          TileArgs t;
          t.depth = std::min(step, taps - d0);
          t.base = src;
          t.row_offsets = pixel_offsets + p0;
          t.depth_offsets = tap_offsets + d0;
          t.panel = panel + d0 * lanes.padded + lane0;
          t.panel_stride = lanes.padded;
          t.out = result + lane0;
          t.out_stride = lanes.padded;
          t.first = d0 == 0;
          run_tiles(tiles.of(vectors), rows, t);
        }
      }
      if (bias != nullptr) {
        transpose_add_into(result, lanes.padded, rows, g.k, y_n + p0, pixels, bias);
      } else {
        transpose_into(result, lanes.padded, rows, g.k, y_n + p0, pixels);
      }
      for (std::int64_t k = 0; k < g.k; ++k) {
        activate(act, y_n + k * pixels + p0, y_n + k * pixels + p0, rows);
      }
    }
  });
}

namespace {

// Whose planes the fused db of filter_gradient sums: dy's (the op's own bias gradient), or those of
// the source x, a 1x1 conv's unpadded input (the bias gradient of the conv with operands swapped).
enum class BiasSums { of_dy, of_source };

// direct_conv_backward_filter without the operand swap; with db, the sums of `sums`.
void filter_gradient(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g, const float* x,
                     const float* dy, float* dw, float* db, BiasSums sums, KernelMode mode, Isa isa,
                     const PooledGradient* pooled_dy) {
  const Lanes lanes(g.k, direct_detail::tile_limits(isa));
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  const Source source = source_of(g);

  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::tap_offsets, static_cast<std::size_t>(taps));
  direct_detail::fill_tap_offsets(g, source, tap_offsets);

  // The reduction runs on dw^T [CRS][K padded], followed by db [K] when it is fused; the chunk
  // plan is that of the [K][CRS] result, so the reduction tree (and the bits) do not depend on the
  // lane padding.
  const std::int64_t filter_size = taps * lanes.padded;
  const std::int64_t sum_count = sums == BiasSums::of_source ? taps : g.k;
  const std::int64_t size = filter_size + (db != nullptr ? sum_count : 0);
  float* result = scratch.shared(SharedBuffer::transposed_result, static_cast<std::size_t>(size));
  const ChunkPlan plan = plan_chunks(g.n, taps * g.k);
  const BlockTiles tiles(isa, lanes, true);
  scratch.reserve_workers(WorkerBuffer::padded_image, source_floats(g, source));
  const auto dy_t_floats = static_cast<std::size_t>(pixels * lanes.padded);
  scratch.reserve_workers(WorkerBuffer::pixel_major_gradient, dy_t_floats);
  const std::int64_t tile_calls = filter_tile_calls(g, tiles, lanes);
  reduce_chunks(
      pool, scratch, mode, plan.chunks, size, result,
      [&](std::int64_t chunk, float* partial, int worker, bool fresh) {
        float* dy_t = scratch.worker(worker, WorkerBuffer::pixel_major_gradient, dy_t_floats);
        // A fresh partial is written by the first image's tiles; only db's sums need zeroes.
        if (fresh) std::fill(partial + filter_size, partial + size, 0.0f);
        // Once per chunk, not per image: dy_t's images are written in lanes [0, K) only, and
        // nothing else writes this worker's buffer until the chunk ends (other ops may
        // between chunks, hence not once per call).
        zero_padding_lanes(dy_t, pixels, lanes);
        for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
          // The next image's inputs, requested while this one's tiles run.
          PrefetchAhead ahead;
          if (n + 1 < plan.end(chunk)) {
            ahead.add(x + (n + 1) * image, static_cast<std::size_t>(image) * sizeof(float));
            if (pooled_dy != nullptr) {
              direct_detail::add_pooled_image(ahead, *pooled_dy, n + 1);
            } else {
              ahead.add(dy + (n + 1) * g.k * pixels,
                        static_cast<std::size_t>(g.k * pixels) * sizeof(float));
            }
          }
          ahead.spread(tile_calls);
          const float* src = source_image(g, source, x + n * image, scratch, worker);
          if (pooled_dy != nullptr) {  // unpooled straight into the pixel-major layout
            unpool_image_transposed(pooled_dy->g, pooled_dy->gradient, n, dy_t, lanes.padded, isa);
          } else {
            transpose_dy(dy + n * g.k * pixels, g.k, pixels, dy_t, lanes.padded, isa);
          }
          accumulate_filter_image(g, source, tiles, lanes, src, dy_t, tap_offsets, partial,
                                  fresh && n == plan.begin(chunk), ahead);
          if (db != nullptr && sums == BiasSums::of_source) {  // x's planes, in cache
            add_plane_sums(x + n * image, pixels, g.c, partial + filter_size);
          } else if (db != nullptr) {  // from dy_t while in cache: plane_sum's bits per channel
            add_column_plane_sums(dy_t, pixels, lanes.padded, g.k, partial + filter_size, isa);
          }
        }
      });
  transpose_into(result, lanes.padded, taps, g.k, dw, taps);
  if (db != nullptr) std::copy(result + filter_size, result + size, db);
}

}  // namespace

void direct_conv_backward_filter(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                 const float* x, const float* dy, float* dw, float* db,
                                 KernelMode mode, Isa isa, const PooledGradient* pooled_dy) {
  if (pooled_dy == nullptr && swaps_filter_operands(g)) {
    // Each element's chain is the same: images of the chunk then pixels ascending, fma of the
    // same two factors (an exact product), in the chunk plan of the same K * C result. db (given
    // only where fuses_bias_gradient(g): the same chunk plan) is summed as conv_bias_gradient
    // sums it, each image's dy planes by plane_sum into the chunk's zeroed partial, in the same
    // pass, where each image's dy, the swapped conv's source, is in cache after its tiles.
    ConvGeometry swapped = g;
    swapped.c = g.k;
    swapped.k = g.c;
    float* dw_t = scratch.shared(SharedBuffer::transposed_filter_gradient,
                                 static_cast<std::size_t>(g.w_size()));
    filter_gradient(pool, scratch, swapped, dy, x, dw_t, db, BiasSums::of_source, mode, isa,
                    nullptr);
    transpose_into(dw_t, g.k, g.c, g.k, dw, g.c);
    return;
  }
  if (pooled_dy == nullptr && is_subsampled_1x1(g) &&
      swaps_filter_operands(subsampled_geometry(g))) {
    // The filter gradient of the stride-1 conv of the input subsampled at the output pixels: each
    // element's chain takes the same products (dy at a pixel times x at its window) in the same
    // order, in the same chunk plan, so the same bits; swapped, each image transposes C floats a
    // pixel, not K. (Not swapped, subsampling did not pay: 1x1 64->64 s2 on 32x32 slower, 128->128
    // s2 on 16x16 no clear difference.)
    direct_conv_backward_filter(pool, scratch, subsampled_geometry(g),
                                subsample_input(pool, scratch, g, x), dy, dw, db, mode, isa);
    return;
  }
  filter_gradient(pool, scratch, g, x, dy, dw, db, BiasSums::of_dy, mode, isa, pooled_dy);
}

bool fuses_bias_gradient(const ConvGeometry& g) {
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s;
  return plan_chunks(g.n, taps * g.k).per_chunk == plan_chunks(g.n, g.k).per_chunk;
}

void conv_bias_gradient(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                        const float* dy, float* db, KernelMode mode) {
  const std::int64_t pixels = std::int64_t(g.p) * g.q;
  const ChunkPlan plan = plan_chunks(g.n, g.k);
  reduce_chunks(pool, scratch, mode, plan.chunks, g.k, db,
                [&](std::int64_t chunk, float* partial, int) {
                  for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
                    add_plane_sums(dy + n * g.k * pixels, pixels, g.k, partial);
                  }
                });
}

bool fuses_maxpool(const ConvGeometry& g, const PoolGeometry& pool) {
  return g.stride_h == 1 && g.stride_w == 1 && is_plain_2x2(pool) && pool.n == g.n &&
         pool.c == g.k && pool.h == g.p && pool.w == g.q;
}

void direct_conv_forward_maxpool(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                 const float* x, const float* w, const float* bias, Activation act,
                                 const PoolGeometry& pool_g, float* y, std::int32_t* argmax,
                                 Isa isa) {
  const direct_detail::PooledOutput pooled{pool_g, y, argmax};
  direct_detail::pixel_conv_forward(pool, scratch, g, x, w, bias, act, nullptr, nullptr, isa,
                                    &pooled);
}

bool direct_backward_data_applies(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1;
}

void direct_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                               const float* dy, const float* w, const float* relu_gate, float* dx,
                               Isa isa, const PooledGradient* pooled_dy) {
  direct_detail::pixel_conv_backward_data(pool, scratch, g, dy, w, relu_gate, dx, isa, pooled_dy);
}

}  // namespace ra::backend::cpu
