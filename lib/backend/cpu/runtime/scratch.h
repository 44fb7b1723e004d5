#pragma once
// Scratch memory owned by one CpuOps: per-worker buffers (GEMM packing panels, column matrices,
// partial sums) and buffers that one call shares between its tasks (per-chunk partials).
// Buffers grow to the largest request and are then reused, so a training loop allocates only
// during its first step. Not thread-safe across calls: one CpuOps serves one run, one op at a time.
// Within a call, worker w touches only its own buffers, and shared buffers are requested by the
// calling thread before the parallel loop starts.
//
// Per-worker buffers are reserved for EVERY worker by the calling thread before the loop
// (reserve_workers): a worker that happens to run no task of an op during the first steps (the
// calling thread took them all, the worker woke late on a loaded machine) would otherwise size
// its buffer steps later, an allocation inside the training loop. worker() still grows a buffer
// it finds too small (never wrong, only late) and counts it: late_growths() is 0 when every
// request was reserved (tested for every op path).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ra::backend::cpu {

enum class WorkerBuffer : int {
  gemm_pack_a,           // packed panels of A (see gemm.h)
  gemm_pack_b,           // packed panels of B
  column_matrix,         // im2col / col2im matrix of one image (cpu_conv.cpp's GEMM route)
  padded_image,          // a zero-padded copy of an image, the source of a direct convolution
  partial,               // a worker's private partial result (tile, image gradient, lane sum)
  pixel_major_gradient,  // an image's output gradient as dy_t[pixel][filter] (backward filter)
  result_band,           // a band of tile results, before it is copied (or transposed) into y
  image_output,          // an image's conv output, pooled before it leaves the worker
  unpooled_gradient,     // an image's conv output gradient, unpooled from its max-pool's
  count
};

enum class SharedBuffer : int {
  chunk_partials,     // one partial per fixed-size chunk of a deterministic reduction
  column_matrices,    // the col2im input matrices of a round of images (backward data, GEMM)
  packed_weights,     // the filters in the layout a direct convolution reads
  transposed_result,  // a reduction's result in [tap][filter] layout, before transposition
  flipped_filters,    // the filters of a backward data pass as those of a forward convolution
  subsampled,         // a strided 1x1 conv's input (or input gradient) at its output pixels
  transposed_filter_gradient,  // a 1x1 filter gradient computed transposed
  count
};

// Offset tables of the direct convolutions (element offsets into an image or a panel).
enum class SharedIndexBuffer : int {
  pixel_offsets,  // the window corner of each output pixel
  tap_offsets,    // each kernel tap (c, r, s) from a window corner
  vector_stores,  // where a storing pixel tile's vectors go (simd/register_tiles.h, PixelStore)
  count
};

class ScratchArena {
 public:
  explicit ScratchArena(int workers);

  // At least `floats` floats for `worker` (in [0, workers)); contents unspecified. The pointer
  // stays valid until the next request for the same buffer.
  float* worker(int worker, WorkerBuffer which, std::size_t floats);
  // Grows buffer `which` of every worker to at least `floats` floats (calling thread only, before
  // the parallel loop whose tasks request it).
  void reserve_workers(WorkerBuffer which, std::size_t floats);
  // Requests worker() had to grow a buffer for: each a reserve_workers call missing before a loop.
  std::int64_t late_growths() const noexcept {
    return late_growths_.load(std::memory_order_relaxed);
  }
  float* shared(SharedBuffer which, std::size_t floats);
  std::int64_t* shared(SharedIndexBuffer which, std::size_t count);

 private:
  static constexpr std::size_t kWorkerBuffers = static_cast<std::size_t>(WorkerBuffer::count);
  static constexpr std::size_t kSharedBuffers = static_cast<std::size_t>(SharedBuffer::count);
  static constexpr std::size_t kIndexBuffers = static_cast<std::size_t>(SharedIndexBuffer::count);

  std::vector<std::array<AlignedVector<float>, kWorkerBuffers>> per_worker_;
  std::array<AlignedVector<float>, kSharedBuffers> shared_;
  std::array<std::vector<std::int64_t>, kIndexBuffers> indices_;
  // Written by worker threads, read between calls: atomic, relaxed (a count, nothing ordered).
  std::atomic<std::int64_t> late_growths_{0};
};

}  // namespace ra::backend::cpu
