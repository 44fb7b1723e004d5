#include "backend/cpu/parallel_gemm.h"

#include <algorithm>

#include "backend/cpu/parallel_for.h"
#include "backend/cpu/reduction.h"

namespace ra::backend::cpu {
namespace {

struct TileGrid {
  std::int64_t rows = 0, cols = 0;  // tiles along m and n
  std::int64_t count() const { return rows * cols; }
};

TileGrid tile_grid(std::int64_t m, std::int64_t n) {
  return {(m + kTileRows - 1) / kTileRows, (n + kTileCols - 1) / kTileCols};
}

}  // namespace

GemmBuffers gemm_buffers(ScratchArena& scratch, int worker) {
  return {scratch.worker(worker, WorkerBuffer::gemm_pack_a, kGemmPackAFloats),
          scratch.worker(worker, WorkerBuffer::gemm_pack_b, kGemmPackBFloats)};
}

void parallel_gemm(ThreadPool& pool, ScratchArena& scratch, std::int64_t m, std::int64_t n,
                   std::int64_t k, MatrixView a, MatrixView b, float* c, std::int64_t ldc,
                   GemmOutput output) {
  if (m <= 0 || n <= 0) return;
  const TileGrid grid = tile_grid(m, n);
  parallel_for(pool, grid.count(), [&](std::int64_t tile, int worker) {
    const std::int64_t i0 = (tile / grid.cols) * kTileRows;
    const std::int64_t j0 = (tile % grid.cols) * kTileCols;
    gemm(std::min(kTileRows, m - i0), std::min(kTileCols, n - j0), k, a.shifted(i0, 0),
         b.shifted(0, j0), c + i0 * ldc + j0, ldc, output, gemm_buffers(scratch, worker));
  });
}

void parallel_gemm_split_k_atomic(ThreadPool& pool, ScratchArena& scratch, std::int64_t m,
                                  std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                                  float* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const TileGrid grid = tile_grid(m, n);
  parallel_for(pool, grid.count(), [&](std::int64_t tile, int) {
    const std::int64_t i0 = (tile / grid.cols) * kTileRows;
    const std::int64_t j0 = (tile % grid.cols) * kTileCols;
    const std::int64_t rows = std::min(kTileRows, m - i0), cols = std::min(kTileCols, n - j0);
    for (std::int64_t i = 0; i < rows; ++i) std::fill_n(c + (i0 + i) * ldc + j0, cols, 0.0f);
  });
  const std::int64_t part_depth = std::max<std::int64_t>(1, (k + kSplitKParts - 1) / kSplitKParts);
  const std::int64_t parts = (k + part_depth - 1) / part_depth;
  parallel_for(pool, grid.count() * parts, [&](std::int64_t task, int worker) {
    const std::int64_t tile = task / parts, part = task % parts;
    const std::int64_t i0 = (tile / grid.cols) * kTileRows;
    const std::int64_t j0 = (tile % grid.cols) * kTileCols;
    const std::int64_t rows = std::min(kTileRows, m - i0), cols = std::min(kTileCols, n - j0);
    const std::int64_t p0 = part * part_depth, depth = std::min(part_depth, k - p0);
    float* partial = scratch.worker(worker, WorkerBuffer::partial,
                                    static_cast<std::size_t>(kTileRows * kTileCols));
    gemm(rows, cols, depth, a.shifted(i0, p0), b.shifted(p0, j0), partial, cols,
         GemmOutput::overwrite, gemm_buffers(scratch, worker));
    for (std::int64_t i = 0; i < rows; ++i)
      atomic_add(c + (i0 + i) * ldc + j0, partial + i * cols, cols);
  });
}

}  // namespace ra::backend::cpu
