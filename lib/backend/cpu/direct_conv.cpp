#include "backend/cpu/direct_conv.h"

#include <algorithm>
#include <cstdint>

#include "backend/cpu/activation.h"
#include "backend/cpu/direct_conv_kernels.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/reduction.h"
#include "backend/cpu/transpose.h"

namespace ra::backend::cpu {
namespace {

using direct_detail::TileArgs;
using direct_detail::TileFunction;
using direct_detail::TileLimits;

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

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
std::int64_t rows_per_band(GemmKernel kernel, const Lanes& lanes) {
  std::int64_t band = 48;
  for (std::int64_t lane0 = 0; lane0 < lanes.padded; lane0 += lanes.block()) {
    band = round_up(band, direct_detail::tile_rows(kernel, lanes.vectors_at(lane0)));
  }
  return band;
}

// The tiles over rows [0, rows) of one lane block and one depth range. `args` addresses row 0.
void run_tiles(GemmKernel kernel, int vectors, std::int64_t rows, const TileArgs& args) {
  const bool grid = args.depth_cols > 0;
  const int full_rows = direct_detail::tile_rows(kernel, vectors);
  const TileFunction full = direct_detail::tile_function(kernel, full_rows, vectors, grid);
  for (std::int64_t i0 = 0; i0 < rows; i0 += full_rows) {
    const int n = static_cast<int>(std::min<std::int64_t>(full_rows, rows - i0));
    TileArgs t = args;
    t.row_offsets += i0;
    t.out += i0 * t.out_stride;
    (n == full_rows ? full : direct_detail::tile_function(kernel, n, vectors, grid))(t);
  }
}

// The output positions of a stride-1 convolution as "wide rows": every position of the source
// image's rows, so that consecutive positions read consecutive source floats; the last
// (source width - output width) positions of each row are computed and discarded.
struct OutputRows {
  std::int64_t count = 0;  // positions computed: (height - 1) * pitch + width
  std::int64_t pitch = 0;  // positions per image row
  std::int64_t width = 0;  // output pixels per image row

  // Calls copy(position, pixel, n) for the runs of n positions from `position` that are output
  // pixels from `pixel` on, within positions [begin, end).
  template <class Copy>
  void for_each_run(std::int64_t begin, std::int64_t end, const Copy& copy) const {
    for (std::int64_t row = begin; row < end;) {
      const std::int64_t line = row / pitch, column = row % pitch;
      const std::int64_t next = std::min(end, (line + 1) * pitch);
      if (column < width) copy(row, line * width + column, std::min(next, line * pitch + width) - row);
      row = next;
    }
  }
};

OutputRows wide_rows(std::int64_t height, std::int64_t width, std::int64_t pitch) {
  return {(height - 1) * pitch + width, pitch, width};
}

// dst[c][i][j] = src[c][i - row_shift][j - col_shift] where that lies inside src's [height][width]
// plane, else 0; dst planes are [dst_height][dst_width].
void shifted_copy(const float* src, std::int64_t channels, std::int64_t height, std::int64_t width,
                  std::int64_t row_shift, std::int64_t col_shift, float* dst,
                  std::int64_t dst_height, std::int64_t dst_width) {
  const std::int64_t j0 = std::clamp<std::int64_t>(col_shift, 0, dst_width);
  const std::int64_t j1 = std::clamp<std::int64_t>(col_shift + width, j0, dst_width);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t i = 0; i < dst_height; ++i) {
      float* out = dst + (c * dst_height + i) * dst_width;
      const std::int64_t row = i - row_shift;
      if (row < 0 || row >= height) {
        std::fill_n(out, dst_width, 0.0f);
        continue;
      }
      const float* in = src + (c * height + row) * width;
      std::fill(out, out + j0, 0.0f);
      // A loop rather than std::copy: rows are short (24 floats for the MNIST conv), and a
      // memmove call per row cost 7% of the backward data convolution.
      const float* from = in + (j0 - col_shift);
      for (std::int64_t j = 0; j < j1 - j0; ++j) out[j0 + j] = from[j];
      std::fill(out + j1, out + dst_width, 0.0f);
    }
  }
}

// Zeroes lanes [count, padded) of each of `rows` rows of a [rows][padded] panel.
void zero_padding_lanes(float* panel, std::int64_t rows, const Lanes& lanes) {
  if (lanes.padded == lanes.count) return;
  for (std::int64_t i = 0; i < rows; ++i) {
    std::fill(panel + i * lanes.padded + lanes.count, panel + (i + 1) * lanes.padded, 0.0f);
  }
}

// The image a forward or filter-gradient tile reads: x itself, or a zero-padded copy when the
// convolution pads (then every read lands inside the copy and padding reads 0, as im2col writes).
struct Source {
  std::int64_t height = 0, width = 0;
  bool padded = false;
};

Source source_of(const ConvGeometry& g) {
  if (g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0) {
    return {g.h, g.w, false};
  }
  return {std::int64_t(g.p - 1) * g.stride_h + g.r, std::int64_t(g.q - 1) * g.stride_w + g.s,
          true};
}

const float* source_image(const ConvGeometry& g, const Source& source, const float* x_image,
                          ScratchArena& scratch, int worker) {
  if (!source.padded) return x_image;
  float* copy = scratch.worker(worker, WorkerBuffer::columns,
                               static_cast<std::size_t>(g.c * source.height * source.width));
  shifted_copy(x_image, g.c, g.h, g.w, g.pad_top, g.pad_left, copy, source.height, source.width);
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

// Offset of tap (c, r, s) from a window corner, for each tap (c * R + r) * S + s.
void fill_tap_offsets(const ConvGeometry& g, const Source& source, std::int64_t* offsets) {
  for (std::int64_t c = 0; c < g.c; ++c) {
    for (std::int64_t r = 0; r < g.r; ++r) {
      for (std::int64_t s = 0; s < g.s; ++s) {
        offsets[(c * g.r + r) * g.s + s] = (c * source.height + r) * source.width + s;
      }
    }
  }
}

// ---- pixel-lane convolutions (stride 1): lanes are consecutive wide-row positions ----------

// Packs rows x depth values, value(row, d), as [row tile][depth][tile rows] panels, rows past
// `rows` zero.
template <class Value>
void pack_row_tiles(std::int64_t rows, std::int64_t depth, int tile_rows, const Value& value,
                    float* panel) {
  const std::int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t d = 0; d < depth; ++d) {
      float* out = panel + (t * depth + d) * tile_rows;
      for (int i = 0; i < tile_rows; ++i) {
        const std::int64_t row = t * tile_rows + i;
        out[i] = row < rows ? value(row, d) : 0.0f;
      }
    }
  }
}

// Copies the valid pixels of a band [rows][band] of wide-row results into the NCHW output:
// out[row][pixel] = act(band[row][position - j0] (+ addend[row])).
void store_band(const OutputRows& wide, std::int64_t j0, std::int64_t positions,
                const float* band, std::int64_t band_stride, std::int64_t rows,
                const float* addend, spec::Activation act, float* out, std::int64_t out_stride) {
  wide.for_each_run(j0, j0 + positions, [&](std::int64_t position, std::int64_t pixel,
                                           std::int64_t count) {
    for (std::int64_t row = 0; row < rows; ++row) {
      const float* from = band + row * band_stride + (position - j0);
      float* to = out + row * out_stride + pixel;
      if (addend != nullptr) {
        const float a = addend[row];
        for (std::int64_t j = 0; j < count; ++j) to[j] = from[j] + a;
        activate(act, to, to, count);
      } else {
        activate(act, from, to, count);
      }
    }
  });
}

// Forward, stride 1: rows = filters (broadcast from w packed per tile of filters), lanes = wide
// output positions read straight from the (copied, padded) image, depth = taps (c, r, s).
void pixel_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                        const float* x, const float* w, const float* bias, spec::Activation act,
                        float* y, GemmKernel kernel) {
  const direct_detail::PixelTileShape shape = direct_detail::pixel_tile_shape(kernel);
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  // The image copy every tile reads: padded, and long enough for the last tile's full vectors.
  const Source source{std::int64_t(g.p) + g.r - 1, std::int64_t(g.q) + g.s - 1, true};
  const std::int64_t copy_floats = g.c * source.height * source.width + shape.lanes;
  const OutputRows wide = wide_rows(g.p, g.q, source.width);
  const std::int64_t row_tiles = (g.k + shape.rows - 1) / shape.rows;
  const std::int64_t band = 2 * std::int64_t(shape.lanes);

  float* panel = scratch.shared(SharedBuffer::packed_weights,
                                static_cast<std::size_t>(row_tiles * taps * shape.rows));
  pack_row_tiles(g.k, taps, shape.rows,
                 [&](std::int64_t k, std::int64_t d) { return w[k * taps + d]; }, panel);
  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::depth_offsets, static_cast<std::size_t>(taps));
  fill_tap_offsets(g, source, tap_offsets);

  // The tile functions, looked up once: a full tile and the last filter tile's.
  const TileFunction full = direct_detail::pixel_tile_function(kernel, false, shape.rows);
  const TileFunction last = direct_detail::pixel_tile_function(
      kernel, false, static_cast<int>(g.k - (row_tiles - 1) * shape.rows));

  parallel_for(pool, g.n, [&](std::int64_t n, int worker) {
    float* src = scratch.worker(worker, WorkerBuffer::columns,
                                static_cast<std::size_t>(copy_floats));
    shifted_copy(x + n * image, g.c, g.h, g.w, g.pad_top, g.pad_left, src, source.height,
                 source.width);
    std::fill(src + copy_floats - shape.lanes, src + copy_floats, 0.0f);
    float* out = scratch.worker(worker, WorkerBuffer::transposed_output,
                                static_cast<std::size_t>(row_tiles * shape.rows * band));
    float* y_n = y + n * g.k * pixels;
    for (std::int64_t j0 = 0; j0 < wide.count; j0 += band) {
      const std::int64_t positions = std::min(band, wide.count - j0);
      for (std::int64_t jv = 0; jv < positions; jv += shape.lanes) {
        for (std::int64_t t = 0; t < row_tiles; ++t) {
          TileArgs a;
          a.depth = taps;
          a.base = src + j0 + jv;
          a.depth_offsets = tap_offsets;
          a.panel = panel + t * taps * shape.rows;
          a.panel_stride = shape.rows;
          a.out = out + t * shape.rows * band + jv;
          a.out_stride = band;
          a.first = true;
          (t + 1 < row_tiles ? full : last)(a);
        }
      }
      store_band(wide, j0, positions, out, band, g.k, bias, act, y_n, pixels);
    }
  });
}

// Backward data, stride 1: rows = channels c (broadcast from w packed per tap and channel tile),
// lanes = wide dx positions read straight from the zero-padded dy_n, depth = filters k (one plane
// apart), one run per tap added in col2im's order.
void pixel_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                              const float* dy, const float* w, float* dx, GemmKernel kernel) {
  const direct_detail::PixelTileShape shape = direct_detail::pixel_tile_shape(kernel);
  const std::int64_t taps = std::int64_t(g.r) * g.s, pixels = std::int64_t(g.h) * g.w;
  // dy_n zero-padded so that input pixel (h, w) and tap (r, s) read output pixel
  // (h + pad_top - r, w + pad_left - s) at (h + R-1 - r, w + S-1 - s) of the copy.
  const std::int64_t height = g.h + g.r - 1, width = g.w + g.s - 1, plane = height * width;
  const std::int64_t row_shift = g.r - 1 - g.pad_top, col_shift = g.s - 1 - g.pad_left;
  const std::int64_t copy_floats = g.k * plane + shape.lanes;
  const OutputRows wide = wide_rows(g.h, g.w, width);
  const std::int64_t row_tiles = (g.c + shape.rows - 1) / shape.rows;
  const std::int64_t band = 2 * std::int64_t(shape.lanes);

  // [tap][channel tile][k][tile rows]: one tap's and tile's panel is K x MR consecutive floats.
  const std::int64_t tap_panel = row_tiles * g.k * shape.rows;
  float* panel = scratch.shared(SharedBuffer::packed_weights,
                                static_cast<std::size_t>(taps * tap_panel));
  for (std::int64_t tap = 0; tap < taps; ++tap) {
    pack_row_tiles(g.c, g.k, shape.rows,
                   [&](std::int64_t c, std::int64_t k) { return w[(k * g.c + c) * taps + tap]; },
                   panel + tap * tap_panel);
  }
  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::tap_offsets, static_cast<std::size_t>(taps));
  for (std::int64_t tap = 0; tap < taps; ++tap) {
    tap_offsets[tap] = (g.r - 1 - tap / g.s) * width + (g.s - 1 - tap % g.s);
  }

  const TileFunction full = direct_detail::pixel_tile_function(kernel, true, shape.rows);
  const TileFunction last = direct_detail::pixel_tile_function(
      kernel, true, static_cast<int>(g.c - (row_tiles - 1) * shape.rows));

  parallel_for(pool, g.n, [&](std::int64_t n, int worker) {
    float* padded = scratch.worker(worker, WorkerBuffer::packed_operand,
                                   static_cast<std::size_t>(copy_floats));
    shifted_copy(dy + n * g.k * g.p * g.q, g.k, g.p, g.q, row_shift, col_shift, padded, height,
                 width);
    std::fill(padded + copy_floats - shape.lanes, padded + copy_floats, 0.0f);
    float* out = scratch.worker(worker, WorkerBuffer::transposed_output,
                                static_cast<std::size_t>(row_tiles * shape.rows * band));
    float* dx_n = dx + n * g.c * pixels;
    for (std::int64_t j0 = 0; j0 < wide.count; j0 += band) {
      const std::int64_t positions = std::min(band, wide.count - j0);
      for (std::int64_t tap = 0; tap < taps; ++tap) {
        for (std::int64_t jv = 0; jv < positions; jv += shape.lanes) {
          for (std::int64_t t = 0; t < row_tiles; ++t) {
            TileArgs a;
            a.depth = g.k;
            a.base = padded + tap_offsets[tap] + j0 + jv;
            a.depth_stride = plane;
            a.panel = panel + tap * tap_panel + t * g.k * shape.rows;
            a.panel_stride = shape.rows;
            a.out = out + t * shape.rows * band + jv;
            a.out_stride = band;
            a.first = tap == 0;
            a.add_run = true;
            (t + 1 < row_tiles ? full : last)(a);
          }
        }
      }
      store_band(wide, j0, positions, out, band, g.c, nullptr, spec::Activation::none, dx_n,
                 pixels);
    }
  });
}

// Adds one image's filter gradient into partial [CRS][K padded]: rows = taps (gathered), lanes =
// filters, depth = the output pixels in ascending order as a grid of whole output rows (blocks of
// about 96 pixels, so that a block of the dy_n^T panel stays in L1).
void accumulate_filter_image(const ConvGeometry& g, const Source& source, GemmKernel kernel,
                             const Lanes& lanes, const float* src, const float* dy_t,
                             const std::int64_t* tap_offsets, float* partial) {
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s;
  for (std::int64_t lane0 = 0; lane0 < lanes.padded; lane0 += lanes.block()) {
    const int vectors = lanes.vectors_at(lane0);
    const std::int64_t block_rows =
        std::max<std::int64_t>(1, depth_block(vectors, lanes.width) / g.q);
    for (std::int64_t p0 = 0; p0 < g.p; p0 += block_rows) {
      const std::int64_t rows = std::min(block_rows, std::int64_t(g.p) - p0);
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
      t.first = false;
      run_tiles(kernel, vectors, taps, t);
    }
  }
}

}  // namespace

void direct_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                         const float* x, const float* w, const float* bias, spec::Activation act,
                         float* y, GemmKernel kernel) {
  if (g.stride_h == 1 && g.stride_w == 1) {
    pixel_conv_forward(pool, scratch, g, x, w, bias, act, y, kernel);
    return;
  }
  // Strided: rows are the output pixels, gathered through a table of window corners.
  const Lanes lanes(g.k, direct_detail::tile_limits(kernel));
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  const Source source = source_of(g);

  // w^T [CRS][K]: a depth step of a tile reads its filters as consecutive lanes.
  float* panel =
      scratch.shared(SharedBuffer::packed_weights, static_cast<std::size_t>(taps * lanes.padded));
  transpose_into(w, taps, g.k, taps, panel, lanes.padded);
  zero_padding_lanes(panel, taps, lanes);
  std::int64_t* pixel_offsets =
      scratch.shared(SharedIndexBuffer::row_offsets, static_cast<std::size_t>(pixels));
  fill_pixel_offsets(g, source, pixel_offsets);
  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::depth_offsets, static_cast<std::size_t>(taps));
  fill_tap_offsets(g, source, tap_offsets);
  const std::int64_t band_rows = rows_per_band(kernel, lanes);

  parallel_for(pool, g.n, [&](std::int64_t n, int worker) {
    const float* src = source_image(g, source, x + n * image, scratch, worker);
    float* result = scratch.worker(worker, WorkerBuffer::transposed_output,
                                   static_cast<std::size_t>(band_rows * lanes.padded));
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
          run_tiles(kernel, vectors, rows, t);
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

void direct_conv_backward_filter(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                                 const float* x, const float* dy, float* dw, spec::KernelMode mode,
                                 GemmKernel kernel) {
  const Lanes lanes(g.k, direct_detail::tile_limits(kernel));
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  const Source source = source_of(g);

  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::row_offsets, static_cast<std::size_t>(taps));
  fill_tap_offsets(g, source, tap_offsets);

  // The reduction runs on dw^T [CRS][K padded]; the chunk plan is that of the [K][CRS] result, so
  // the reduction tree (and the bits) do not depend on the lane padding.
  const std::int64_t size = taps * lanes.padded;
  float* result = scratch.shared(SharedBuffer::transposed_result, static_cast<std::size_t>(size));
  const ChunkPlan plan = plan_chunks(g.n, taps * g.k);
  reduce_chunks(pool, scratch, mode, plan.chunks, size, result,
                [&](std::int64_t chunk, float* partial, int worker) {
                  float* dy_t = scratch.worker(worker, WorkerBuffer::packed_operand,
                                               static_cast<std::size_t>(pixels * lanes.padded));
                  for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
                    const float* src = source_image(g, source, x + n * image, scratch, worker);
                    transpose_into(dy + n * g.k * pixels, pixels, g.k, pixels, dy_t,
                                   lanes.padded);
                    zero_padding_lanes(dy_t, pixels, lanes);
                    accumulate_filter_image(g, source, kernel, lanes, src, dy_t, tap_offsets,
                                            partial);
                  }
                });
  transpose_into(result, lanes.padded, taps, g.k, dw, taps);
}

bool direct_backward_data_applies(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1;
}

void direct_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                               const float* dy, const float* w, float* dx, GemmKernel kernel) {
  pixel_conv_backward_data(pool, scratch, g, dy, w, dx, kernel);
}

}  // namespace ra::backend::cpu
