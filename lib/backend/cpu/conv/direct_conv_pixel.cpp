// The pixel-lane direct convolutions (stride 1): lanes are consecutive wide-row positions read
// straight from a zero-padded copy of the source; results land in NCHW (direct_conv.h).
#include <algorithm>
#include <cstdint>

#include "backend/cpu/activation.h"
#include "backend/cpu/conv/column_packing.h"
#include "backend/cpu/conv/direct_conv_support.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "backend/cpu/runtime/prefetch_ahead.h"
#include "backend/cpu/simd/register_tiles.h"
#include "core/integer_math.h"

namespace ra::backend::cpu::direct_detail {
namespace {

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
      if (column < width)
        copy(row, line * width + column, std::min(next, line * pitch + width) - row);
      row = next;
    }
  }
};

OutputRows wide_rows(std::int64_t height, std::int64_t width, std::int64_t pitch) {
  return {(height - 1) * pitch + width, pitch, width};
}

// PixelStore::vectors for the positions of `wide`, `width` lanes per vector: the vectors that
// cover [0, wide.count), the last one's lanes past it no output lanes.
std::int64_t vector_store_entries(const OutputRows& wide, int width) {
  return ceil_div(wide.count, width) * kPixelStoreEntries;
}

void fill_vector_stores(const OutputRows& wide, int width, std::int64_t* entries) {
  const std::int64_t vectors = vector_store_entries(wide, width) / kPixelStoreEntries;
  for (std::int64_t v = 0; v < vectors; ++v) {
    std::int64_t lanes = 0, stored = 0, first_pixel = 0;
    for (int lane = 0; lane < width; ++lane) {
      const std::int64_t position = v * width + lane;
      const std::int64_t line = position / wide.pitch, column = position % wide.pitch;
      if (position >= wide.count || column >= wide.width) continue;
      if (stored++ == 0) first_pixel = line * wide.width + column;
      lanes |= std::int64_t(1) << lane;
    }
    std::int64_t* entry = entries + v * kPixelStoreEntries;
    entry[0] = lanes;
    entry[1] = (std::int64_t(1) << stored) - 1;
    entry[2] = first_pixel;
  }
}

// Packs rows x depth values, value(row, d), as [row tile][depth][tile rows] panels, rows past
// `rows` zero.
template <class Value>
void pack_row_tiles(std::int64_t rows, std::int64_t depth, int tile_rows, const Value& value,
                    float* panel) {
  const std::int64_t tiles = ceil_div(rows, tile_rows);
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

// The zero-padded copy a pixel tile reads (shifted_copy into `which`), followed by `slack` zeros:
// the last tile's full vectors may read that far past the last output position's source.
std::size_t padded_source_floats(std::int64_t channels, std::int64_t copy_height,
                                 std::int64_t copy_width, std::int64_t slack) {
  return static_cast<std::size_t>(channels * copy_height * copy_width + slack);
}

const float* padded_source(ScratchArena& scratch, int worker, const float* src,
                           std::int64_t channels, std::int64_t height, std::int64_t width,
                           std::int64_t row_shift, std::int64_t col_shift, std::int64_t copy_height,
                           std::int64_t copy_width, std::int64_t slack) {
  const auto floats =
      static_cast<std::int64_t>(padded_source_floats(channels, copy_height, copy_width, slack));
  float* copy =
      scratch.worker(worker, WorkerBuffer::padded_image, static_cast<std::size_t>(floats));
  shifted_copy(src, channels, height, width, row_shift, col_shift, copy, copy_height, copy_width);
  std::fill(copy + floats - slack, copy + floats, 0.0f);
  return copy;
}

// padded_source of image n of a PooledGradient: unpooled straight into the copy where that
// holds the whole image, else unpooled whole and then copied.
const float* padded_unpooled_source(ScratchArena& scratch, int worker, const PooledGradient& pooled,
                                    std::int64_t n, std::int64_t row_shift, std::int64_t col_shift,
                                    std::int64_t copy_height, std::int64_t copy_width,
                                    std::int64_t slack) {
  const auto floats =
      static_cast<std::int64_t>(padded_source_floats(pooled.g.c, copy_height, copy_width, slack));
  float* copy =
      scratch.worker(worker, WorkerBuffer::padded_image, static_cast<std::size_t>(floats));
  if (!unpool_shifted(pooled, n, row_shift, col_shift, copy, copy_height, copy_width)) {
    return padded_source(scratch, worker, unpooled_image(scratch, worker, pooled, n), pooled.g.c,
                         pooled.g.h, pooled.g.w, row_shift, col_shift, copy_height, copy_width,
                         slack);
  }
  std::fill(copy + floats - slack, copy + floats, 0.0f);
  return copy;
}

// The padded copy of a pixel convolution's source. A tile reads its lanes from every channel in
// turn, and the channels of its depth must stay in L1 for the next filter tile: where a plane is a
// multiple of 256 bytes (32x32 floats are 4 KiB, the L1's set period; a 3x3 conv of 14x14 images
// copies planes of 16x16), the channels fall into a few cache sets and evict one another, so the
// copy gets a row of zeros per plane that no output position reads. (ResNet29v2's 1x1 64->16 on
// 32x32 ran 25% faster with it, when the 1x1 convs still read this copy: packs_columns.)
Source pixel_source(const ConvGeometry& g) {
  const std::int64_t height = std::int64_t(g.p) + g.r - 1, width = std::int64_t(g.q) + g.s - 1;
  const bool aliases = height * width % 64 == 0;
  return {aliases ? height + 1 : height, width, true};
}

// Copies the valid pixels of a band [rows][band] of wide-row results into the NCHW output:
// out[row][pixel] = act(band[row][position - j0] (+ addend[row])), then, with a gate (laid out
// as out), out = relu_backward(gate, out).
void store_band(const OutputRows& wide, std::int64_t j0, std::int64_t positions, const float* band,
                std::int64_t band_stride, std::int64_t rows, const float* addend, Activation act,
                const float* gate, float* out, std::int64_t out_stride) {
  wide.for_each_run(
      j0, j0 + positions, [&](std::int64_t position, std::int64_t pixel, std::int64_t count) {
        for (std::int64_t row = 0; row < rows; ++row) {
          const float* from = band + row * band_stride + (position - j0);
          float* to = out + row * out_stride + pixel;
          // One pass per row run, with the bits of the separate steps.
          const float* gate_run = gate == nullptr ? nullptr : gate + row * out_stride + pixel;
          if (addend != nullptr) {
            add_then_activate(act, from, addend[row], to, count);
          } else if (act == Activation::none && gate_run != nullptr) {
            relu_backward(gate_run, from, to, count);
            continue;
          } else {
            activate(act, from, to, count);
          }
          if (gate_run != nullptr) relu_backward(gate_run, to, to, count);
        }
      });
}

// The output vectors of a row-vector pass: each output row of q pixels (q a multiple of the vector
// width) cut into vectors of `width` pixels, vector i holding output pixels [i * width, (i + 1) *
// width) and reading the source from source_offset(i). Wide rows compute (pitch - q) positions per
// row that the output discards, 2 of every 10 for the 8x8 outputs of a 3x3 conv (pitch 10: 5
// tiles of 16 positions for 4 of output), 2 of 18 for 16x16; these tiles compute output pixels
// only, and every lane they store is one (no masked stores).
struct RowVectors {
  std::int64_t count = 0;    // vectors in an image
  std::int64_t per_row = 0;  // vectors in an output row
  std::int64_t pitch = 0;    // source floats per row
  int width = 0;

  std::int64_t source_offset(std::int64_t i) const {
    return i / per_row * pitch + i % per_row * width;
  }
};

// Whether a storing pass over g takes row vectors: where the instruction set has their tiles
// (2 vectors each, the second at its own offset), whole vectors fill the output rows and the wide
// rows would discard positions.
bool uses_row_vectors(Isa isa, const ConvGeometry& g, std::int64_t pitch, int rows) {
  const int width = tile_limits(isa).width;
  return pixel_row_store_tile_function(isa, rows, 1) != nullptr && pixel_tile_vectors(isa) == 2 &&
         g.q % width == 0 && pitch > g.q;
}

// The tile functions of a forward pass, looked up once: full tiles and the last filter tile's,
// each with every vector count (the last vectors of a band cover only the positions left);
// storing tiles when `stores`, row-vector ones when `by_rows`, dense ones when `dense` (neither
// reads PixelStore::vectors).
struct ForwardTiles {
  ForwardTiles(Isa isa, bool stores, bool by_rows, bool dense, int full_rows, int last_rows,
               int vectors) {
    const auto of = [&](int rows, int v) {
      if (by_rows) return pixel_row_store_tile_function(isa, rows, v);
      if (dense) return pixel_dense_store_tile_function(isa, rows, v);
      return stores ? pixel_store_tile_function(isa, rows, v)
                    : pixel_tile_function(isa, false, rows, v);
    };
    for (int v = 1; v <= vectors; ++v) {
      full[v - 1] = of(full_rows, v);
      last[v - 1] = of(last_rows, v);
    }
  }
  TileFunction full[kMaxPixelTileVectors] = {}, last[kMaxPixelTileVectors] = {};
};

// Tile calls per image of a forward pass: bands of `band` wide positions, each cut into tiles
// of `lanes` positions, times the filter tiles.
std::int64_t tile_calls_per_image(const OutputRows& wide, std::int64_t band, std::int64_t lanes,
                                  std::int64_t row_tiles) {
  std::int64_t calls = 0;
  for (std::int64_t j0 = 0; j0 < wide.count; j0 += band) {
    calls += ceil_div(std::min(band, wide.count - j0), lanes) * row_tiles;
  }
  return calls;
}

// The PixelStore::vectors of a storing forward pass over `wide` (SharedIndexBuffer::vector_stores).
const std::int64_t* vector_store_table(ScratchArena& scratch, const OutputRows& wide, int width) {
  std::int64_t* table = scratch.shared(SharedIndexBuffer::vector_stores,
                                       static_cast<std::size_t>(vector_store_entries(wide, width)));
  fill_vector_stores(wide, width, table);
  return table;
}

// Max-pools image n's output y_n ([filters][pixels], kept in the worker's buffer) into pooled.
void pool_image(const PooledOutput& pooled, std::int64_t n, std::int64_t filters,
                std::int64_t pixels, const float* y_n, Isa isa) {
  const std::int64_t pooled_pixels = std::int64_t(pooled.g.p) * pooled.g.q;
  for (std::int64_t k = 0; k < filters; ++k) {
    const std::int64_t plane = n * filters + k;
    maxpool_plane_2x2(pooled.g, y_n + k * pixels, plane * pixels, pooled.y + plane * pooled_pixels,
                      pooled.argmax + plane * pooled_pixels, isa);
  }
}

}  // namespace

// Forward, stride 1: rows = filters (broadcast from w packed per tile of filters), lanes = wide
// output positions read straight from the (copied, padded) image, depth = taps (c, r, s).
// size: the per-image loop fills each tile's arguments in place, in its innermost loop.
void pixel_conv_forward(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                        const float* x, const float* w, const float* bias, Activation act,
                        const float* relu_gate, float* y, Isa isa, const PooledOutput* pooled,
                        const PooledGradient* unpooled_x) {
  const PixelTileShape shape = pixel_tile_shape(isa);
  const std::int64_t taps = std::int64_t(g.c) * g.r * g.s, pixels = std::int64_t(g.p) * g.q;
  const std::int64_t image = std::int64_t(g.c) * g.h * g.w;
  // The image copy every tile reads: padded, and long enough for the last tile's full vectors.
  const Source source = pixel_source(g);
  const OutputRows wide = wide_rows(g.p, g.q, source.width);
  const std::int64_t row_tiles = ceil_div(g.k, shape.rows);
  const std::int64_t band = 2 * std::int64_t(shape.lanes);

  float* panel = scratch.shared(SharedBuffer::packed_weights,
                                static_cast<std::size_t>(row_tiles * taps * shape.rows));
  pack_row_tiles(
      g.k, taps, shape.rows, [&](std::int64_t k, std::int64_t d) { return w[k * taps + d]; },
      panel);
  std::int64_t* tap_offsets =
      scratch.shared(SharedIndexBuffer::tap_offsets, static_cast<std::size_t>(taps));
  const bool packs = packs_columns(g, unpooled_x);
  if (packs) {
    for (std::int64_t c = 0; c < taps; ++c) tap_offsets[c] = c * shape.lanes;
  } else {
    fill_tap_offsets(g, source, tap_offsets);
  }

  // Storing tiles where the instruction set has them and the epilogue is one they apply (tanh
  // and sigmoid are store_band's).
  const int width = tile_limits(isa).width, vectors = pixel_tile_vectors(isa);
  const int last_rows = static_cast<int>(g.k - (row_tiles - 1) * shape.rows);
  const bool stores = (act == Activation::none || act == Activation::relu) &&
                      pixel_store_tile_function(isa, shape.rows, 1) != nullptr;
  const bool by_rows = stores && uses_row_vectors(isa, g, source.width, shape.rows);
  const RowVectors row_vectors{pixels / width, g.q / width, source.width, width};
  // Wide rows that discard no position: every lane stored is an output pixel.
  const bool dense = stores && !by_rows && source.width == g.q && pixels % width == 0 &&
                     pixel_dense_store_tile_function(isa, shape.rows, 1) != nullptr;
  const ForwardTiles tiles(isa, stores, by_rows, dense, shape.rows, last_rows, vectors);
  const std::int64_t* vector_stores =
      stores && !by_rows && !dense ? vector_store_table(scratch, wide, width) : nullptr;

  const auto column_floats = static_cast<std::size_t>(g.c * shape.lanes);
  // Storing tiles over packed columns go filter tile by filter tile over a block of columns (some
  // 16 KiB of them): the lines a column writes in every output plane share one L1 set where the
  // planes are 4 KiB apart (32x32), so column by column each tile's stores evicted the last ones'.
  const std::int64_t block_columns =
      packs && stores ? std::max<std::int64_t>(1, 4096 / std::int64_t(column_floats)) : 1;
  scratch.reserve_workers(
      WorkerBuffer::padded_image,
      packs ? block_columns * column_floats
            : padded_source_floats(g.c, source.height, source.width, shape.lanes));
  const auto band_floats = static_cast<std::size_t>(row_tiles * shape.rows * band);
  if (!stores) scratch.reserve_workers(WorkerBuffer::result_band, band_floats);
  const auto image_floats = static_cast<std::size_t>(g.k * pixels);
  if (pooled != nullptr) scratch.reserve_workers(WorkerBuffer::image_output, image_floats);
  if (unpooled_x != nullptr) reserve_unpooled(scratch, *unpooled_x);
  // Tile calls per image, over which the next image's inputs are requested (prefetch_ahead.h).
  const std::int64_t tile_calls = by_rows
                                      ? ceil_div(row_vectors.count, vectors) * row_tiles
                                      : tile_calls_per_image(wide, band, shape.lanes, row_tiles);
  parallel_for_ahead(pool, g.n, [&](std::int64_t n, std::int64_t next, int worker) {
    // The next image's source (not its relu gate: the storing tiles already request each gate line
    // shortly before they read it, and requesting it an image ahead as well would only compete with
    // the source's requests for the core's few line fill buffers).
    PrefetchAhead ahead;
    if (next >= 0 && unpooled_x != nullptr) {
      add_pooled_image(ahead, *unpooled_x, next);
    } else if (next >= 0) {
      ahead.add(x + next * image, static_cast<std::size_t>(image) * sizeof(float));
    }
    ahead.spread(tile_calls);
    float* column =
        packs ? scratch.worker(worker, WorkerBuffer::padded_image, block_columns * column_floats)
              : nullptr;
    const float* src =
        packs ? nullptr
        : unpooled_x != nullptr
            ? padded_unpooled_source(scratch, worker, *unpooled_x, n, g.pad_top, g.pad_left,
                                     source.height, source.width, shape.lanes)
            : padded_source(scratch, worker, x + n * image, g.c, g.h, g.w, g.pad_top, g.pad_left,
                            source.height, source.width, shape.lanes);
    float* out = stores ? nullptr : scratch.worker(worker, WorkerBuffer::result_band, band_floats);
    float* y_n = pooled != nullptr
                     ? scratch.worker(worker, WorkerBuffer::image_output, image_floats)
                     : y + n * g.k * pixels;
    const float* gate_n = relu_gate == nullptr ? nullptr : relu_gate + n * g.k * pixels;
    // The arguments every tile of the image shares, set once (a TileArgs is some 20 words).
    TileArgs a;
    a.depth = taps;
    a.depth_offsets = tap_offsets;
    a.panel_stride = shape.rows;
    a.column_stride = std::int64_t(column_floats);  // dense tiles over packed columns
    a.out_stride = stores ? pixels : band;
    a.store.vectors = vector_stores;
    a.store.relu = act == Activation::relu;
    // The filter tiles over the v vectors a addresses (at column jv of the band, when not stores).
    const auto filter_tiles = [&](int v, std::int64_t jv) {
      for (std::int64_t t = 0; t < row_tiles; ++t) {
        const std::int64_t row0 = t * shape.rows;
        a.panel = panel + t * taps * shape.rows;
        if (stores) {
          a.out = y_n + row0 * pixels;
          a.store.addend = bias == nullptr ? nullptr : bias + row0;
          a.store.gate = gate_n == nullptr ? nullptr : gate_n + row0 * pixels;
        } else {
          a.out = out + row0 * band + jv;
        }
        (t + 1 < row_tiles ? tiles.full : tiles.last)[v - 1](a);
        ahead.step();
      }
    };
    if (by_rows) {
      for (std::int64_t i = 0; i < row_vectors.count; i += vectors) {
        const auto v = static_cast<int>(std::min<std::int64_t>(vectors, row_vectors.count - i));
        const std::int64_t offset = row_vectors.source_offset(i);
        a.base = src + offset;
        a.vector_stride = v > 1 ? row_vectors.source_offset(i + 1) - offset : 0;
        a.store.position = i * width;
        filter_tiles(v, 0);
      }
    }
    const std::int64_t block = block_columns * shape.lanes;
    for (std::int64_t j0 = 0; j0 < (packs && stores ? pixels : 0); j0 += block) {
      const std::int64_t positions = std::min(block, pixels - j0);
      const std::int64_t columns = ceil_div(positions, shape.lanes);
      pack_columns(x + n * image, g.c, pixels, j0, columns, shape.lanes,
                   std::int64_t(column_floats), column);
      // Dense tiles take the block's whole columns in one call (16-long chains: a tile's fixed
      // cost, its call and its setup, weighed on each column's).
      const std::int64_t whole = dense ? positions / shape.lanes : 0;
      for (std::int64_t t = 0; t < row_tiles; ++t) {
        const std::int64_t row0 = t * shape.rows;
        a.panel = panel + t * taps * shape.rows;
        a.out = y_n + row0 * pixels;
        a.store.addend = bias == nullptr ? nullptr : bias + row0;
        a.store.gate = gate_n == nullptr ? nullptr : gate_n + row0 * pixels;
        if (whole > 0) {
          a.base = column;
          a.store.position = j0;
          a.columns = whole;
          (t + 1 < row_tiles ? tiles.full : tiles.last)[vectors - 1](a);
          a.columns = 1;  // the partial column below is one tile, of the same dense function
          for (std::int64_t i = 0; i < whole; ++i) ahead.step();
        }
        for (std::int64_t i = whole; i < columns; ++i) {
          const std::int64_t jv = i * shape.lanes;
          const auto v =
              static_cast<int>(std::min<std::int64_t>(vectors, ceil_div(positions - jv, width)));
          a.base = column + i * std::int64_t(column_floats);
          a.store.position = j0 + jv;
          (t + 1 < row_tiles ? tiles.full : tiles.last)[v - 1](a);
          ahead.step();
        }
      }
    }
    for (std::int64_t j0 = 0; j0 < (by_rows || (packs && stores) ? 0 : wide.count); j0 += band) {
      const std::int64_t positions = std::min(band, wide.count - j0);
      for (std::int64_t jv = 0; jv < positions; jv += shape.lanes) {
        const auto v =
            static_cast<int>(std::min<std::int64_t>(vectors, ceil_div(positions - jv, width)));
        if (packs) {
          pack_column(x + n * image, g.c, pixels, j0 + jv, shape.lanes, column);
          a.base = column;
        } else {
          a.base = src + j0 + jv;
        }
        a.store.position = j0 + jv;
        filter_tiles(v, jv);
      }
      if (!stores) store_band(wide, j0, positions, out, band, g.k, bias, act, gate_n, y_n, pixels);
    }
    if (pooled != nullptr) pool_image(*pooled, n, g.k, pixels, y_n, isa);
  });
}

// Backward data, stride 1, as the forward convolution it is: dx = conv(dy zero-padded by R-1 - pad,
// filters transposed (k <-> c) and flipped (r, s -> R-1 - r, S-1 - s)). The same pixel tiles with
// the whole depth (k, r, s) in one chain: no per-tap partial sums stored and reloaded, and the
// relu gate applied as each band is stored.
void pixel_conv_backward_data(ThreadPool& pool, ScratchArena& scratch, const ConvGeometry& g,
                              const float* dy, const float* w, const float* relu_gate, float* dx,
                              Isa isa, const PooledGradient* pooled_dy) {
  // The forward geometry: dy's K channels of P x Q in, C filters, dx's H x W out.
  ConvGeometry t;
  t.n = g.n;
  t.c = g.k;
  t.h = g.p;
  t.w = g.q;
  t.k = g.c;
  t.r = g.r;
  t.s = g.s;
  t.pad_top = g.r - 1 - g.pad_top;
  t.pad_left = g.s - 1 - g.pad_left;
  t.p = g.h;
  t.q = g.w;
  t.pad_bottom = t.p + t.r - 1 - t.h - t.pad_top;
  t.pad_right = t.q + t.s - 1 - t.w - t.pad_left;
  // wt[c][k][tap] = w[k][c][taps - 1 - tap]: tap (r, s) of the forward filter is (R-1 - r,
  // S-1 - s) of the original, flattened r * S + s.
  const std::int64_t taps = std::int64_t(g.r) * g.s;
  float* wt = scratch.shared(SharedBuffer::flipped_filters, static_cast<std::size_t>(g.w_size()));
  for (std::int64_t c = 0; c < g.c; ++c) {
    for (std::int64_t k = 0; k < g.k; ++k) {
      for (std::int64_t tap = 0; tap < taps; ++tap) {
        wt[(c * g.k + k) * taps + tap] = w[(k * g.c + c) * taps + (taps - 1 - tap)];
      }
    }
  }
  pixel_conv_forward(pool, scratch, t, dy, wt, nullptr, Activation::none, relu_gate, dx, isa,
                     nullptr, pooled_dy);
}

}  // namespace ra::backend::cpu::direct_detail
