#include "backend/cpu/gemm/parallel_gemm.h"

#include <algorithm>

#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

// C cut into task tiles of whole register tiles (a partial register tile would waste lanes).
struct TileGrid {
  std::int64_t m = 0, n = 0;
  std::int64_t tile_rows = 0, tile_cols = 0;
  std::int64_t rows = 0, cols = 0;  // tiles along m and n

  // Tiles of about kTileRows x kTileCols.
  TileGrid(std::int64_t m_, std::int64_t n_, Isa isa) : m(m_), n(n_) {
    const GemmTile tile = gemm_tile(isa);
    set(round_up(kTileRows, tile.rows), round_up(kTileCols, tile.cols));
  }
  // At least `tasks` tiles (when C has that many register tiles), cut for the shortest makespan:
  // the threads run ceil(tiles / tasks) waves, each as long as the largest tile, which packs its
  // rows of A and its columns of B over the whole k range (about 2 MAC-times per packed float:
  // a copy moves one float while the tile does two vector FMAs per cycle) and computes rows x
  // cols multiply-adds per k (columns rounded up to whole register tiles: a partial one costs a
  // full one). Packing alone is not the measure: cut into 4 row tiles, the dense 9216 -> 128
  // forward pass would pack its whole B operand (9216 x 128 floats, 4.7 MB) once per tile, four
  // times; cut by columns into 96 + 32 (whole 48-wide register tiles), it would leave one thread a
  // third of the other's work.
  TileGrid(std::int64_t m_, std::int64_t n_, Isa isa, std::int64_t tasks) : m(m_), n(n_) {
    const GemmTile tile = gemm_tile(isa);
    const std::int64_t max_rows = ceil_div(m, tile.rows);
    const std::int64_t max_cols = ceil_div(n, tile.cols);
    std::int64_t best_cost = -1;
    for (std::int64_t row_tiles = 1; row_tiles <= std::min(max_rows, tasks); ++row_tiles) {
      const std::int64_t col_tiles = std::min(max_cols, ceil_div(tasks, row_tiles));
      const std::int64_t rows_each = round_up(ceil_div(m, row_tiles), tile.rows);
      const std::int64_t cols_each = round_up(ceil_div(n, col_tiles), tile.cols);
      const std::int64_t real_rows = ceil_div(m, rows_each);
      const std::int64_t real_cols = ceil_div(n, cols_each);
      const std::int64_t waves = ceil_div(real_rows * real_cols, tasks);
      const std::int64_t largest_rows = std::min(rows_each, m);
      const std::int64_t largest_cols = std::min(cols_each, round_up(n, tile.cols));
      const std::int64_t cost =
          waves * (2 * (largest_rows + largest_cols) + largest_rows * largest_cols);
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        tile_rows = rows_each;
        tile_cols = cols_each;
      }
    }
    set(tile_rows, tile_cols);
  }
  void set(std::int64_t tile_rows_, std::int64_t tile_cols_) {
    tile_rows = tile_rows_;
    tile_cols = tile_cols_;
    rows = ceil_div(m, tile_rows);
    cols = ceil_div(n, tile_cols);
  }
  std::int64_t count() const { return rows * cols; }
  std::int64_t row0(std::int64_t tile) const { return (tile / cols) * tile_rows; }
  std::int64_t col0(std::int64_t tile) const { return (tile % cols) * tile_cols; }
  std::int64_t rows_of(std::int64_t tile) const { return std::min(tile_rows, m - row0(tile)); }
  std::int64_t cols_of(std::int64_t tile) const { return std::min(tile_cols, n - col0(tile)); }
};

}  // namespace

GemmBuffers gemm_buffers(ScratchArena& scratch, int worker) {
  return {scratch.worker(worker, WorkerBuffer::gemm_pack_a, kGemmPackAFloats),
          scratch.worker(worker, WorkerBuffer::gemm_pack_b, kGemmPackBFloats)};
}

void reserve_gemm_buffers(ScratchArena& scratch) {
  scratch.reserve_workers(WorkerBuffer::gemm_pack_a, kGemmPackAFloats);
  scratch.reserve_workers(WorkerBuffer::gemm_pack_b, kGemmPackBFloats);
}

void parallel_gemm(ThreadPool& pool, ScratchArena& scratch, std::int64_t m, std::int64_t n,
                   std::int64_t k, MatrixView a, MatrixView b, float* c, std::int64_t ldc,
                   GemmOutput output) {
  parallel_gemm(pool, scratch, m, n, k, a, b, c, ldc, output, active_isa());
}

void parallel_gemm(ThreadPool& pool, ScratchArena& scratch, std::int64_t m, std::int64_t n,
                   std::int64_t k, MatrixView a, MatrixView b, float* c, std::int64_t ldc,
                   GemmOutput output, Isa isa) {
  if (m <= 0 || n <= 0) return;
  // One tile per thread: tile boundaries never change a sum, so the grid may follow the threads.
  const TileGrid grid(m, n, isa, pool.threads());
  reserve_gemm_buffers(scratch);
  parallel_for(pool, grid.count(), [&](std::int64_t tile, int worker) {
    const std::int64_t i0 = grid.row0(tile), j0 = grid.col0(tile);
    gemm(grid.rows_of(tile), grid.cols_of(tile), k, a.shifted(i0, 0), b.shifted(0, j0),
         c + i0 * ldc + j0, ldc, output, gemm_buffers(scratch, worker), isa);
  });
}

void parallel_gemm_split_k_atomic(ThreadPool& pool, ScratchArena& scratch, std::int64_t m,
                                  std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                                  float* c, std::int64_t ldc) {
  parallel_gemm_split_k_atomic(pool, scratch, m, n, k, a, b, c, ldc, active_isa());
}

void parallel_gemm_split_k_atomic(ThreadPool& pool, ScratchArena& scratch, std::int64_t m,
                                  std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                                  float* c, std::int64_t ldc, Isa isa) {
  if (m <= 0 || n <= 0) return;
  const TileGrid grid(m, n, isa);
  parallel_for(pool, grid.count(), [&](std::int64_t tile, int) {
    const std::int64_t i0 = grid.row0(tile), j0 = grid.col0(tile), cols = grid.cols_of(tile);
    for (std::int64_t i = 0; i < grid.rows_of(tile); ++i)
      std::fill_n(c + (i0 + i) * ldc + j0, cols, 0.0f);
  });
  const std::int64_t part_depth = std::max<std::int64_t>(1, ceil_div(k, kSplitKParts));
  const std::int64_t parts = ceil_div(k, part_depth);
  reserve_gemm_buffers(scratch);
  const auto tile_floats = static_cast<std::size_t>(grid.tile_rows * grid.tile_cols);
  scratch.reserve_workers(WorkerBuffer::partial, tile_floats);
  parallel_for(pool, grid.count() * parts, [&](std::int64_t task, int worker) {
    const std::int64_t tile = task / parts, part = task % parts;
    const std::int64_t i0 = grid.row0(tile), j0 = grid.col0(tile);
    const std::int64_t rows = grid.rows_of(tile), cols = grid.cols_of(tile);
    const std::int64_t p0 = part * part_depth, depth = std::min(part_depth, k - p0);
    float* partial = scratch.worker(worker, WorkerBuffer::partial, tile_floats);
    gemm(rows, cols, depth, a.shifted(i0, p0), b.shifted(p0, j0), partial, cols,
         GemmOutput::overwrite, gemm_buffers(scratch, worker), isa);
    for (std::int64_t i = 0; i < rows; ++i)
      atomic_add(c + (i0 + i) * ldc + j0, partial + i * cols, cols);
  });
}

}  // namespace ra::backend::cpu
