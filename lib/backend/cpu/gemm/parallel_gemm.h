#pragma once
// Multi-threaded GEMM on top of gemm.h, in the two modes of ops.h.
#include <cstdint>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/runtime/scratch.h"
#include "core/thread_pool.h"

namespace ra::backend::cpu {

// The nondeterministic GEMM cuts C into tasks of about kTileRows x kTileCols, rounded up to
// whole register tiles of the variant (avx512: 32 x 288, avx2: 36 x 256, portable: 32 x 256);
// one task computes one whole tile over its part of the k range. The deterministic GEMM cuts C
// into one tile per thread, chosen to pack the least (see TileGrid in parallel_gemm.cpp).
inline constexpr std::int64_t kTileRows = 32;
inline constexpr std::int64_t kTileCols = 256;
// Split-k parts of the nondeterministic path: at least 3, because two partials added into a zero
// output commute exactly ((0 + a) + b == (0 + b) + a), so only a third one can change the bits.
inline constexpr std::int64_t kSplitKParts = 4;

// Deterministic: each C element is the same sequential sum as gemm() computes, whatever the
// thread count (a tile is never split along k; tile boundaries never change a sum's order).
void parallel_gemm(ThreadPool& pool, ScratchArena& scratch, std::int64_t m, std::int64_t n,
                   std::int64_t k, MatrixView a, MatrixView b, float* c, std::int64_t ldc,
                   GemmOutput output);
void parallel_gemm(ThreadPool& pool, ScratchArena& scratch, std::int64_t m, std::int64_t n,
                   std::int64_t k, MatrixView a, MatrixView b, float* c, std::int64_t ldc,
                   GemmOutput output, Isa isa);

// Nondeterministic: C = A B (overwritten). The k range is cut into kSplitKParts parts; the task
// for (tile, part) computes that part's partial tile in its own buffer and adds it into C with
// atomic float adds, so C's bits depend on the order in which tasks finish.
void parallel_gemm_split_k_atomic(ThreadPool& pool, ScratchArena& scratch, std::int64_t m,
                                  std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                                  float* c, std::int64_t ldc);
void parallel_gemm_split_k_atomic(ThreadPool& pool, ScratchArena& scratch, std::int64_t m,
                                  std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                                  float* c, std::int64_t ldc, Isa isa);

// A worker's packing buffers for gemm().
GemmBuffers gemm_buffers(ScratchArena& scratch, int worker);
// Reserves every worker's packing panels (ScratchArena::reserve_workers): before a parallel loop
// whose tasks call gemm_buffers.
void reserve_gemm_buffers(ScratchArena& scratch);

}  // namespace ra::backend::cpu
