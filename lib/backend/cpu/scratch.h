#pragma once
// Scratch memory owned by one CpuOps: per-worker buffers (GEMM packing panels, column matrices,
// partial sums) and buffers that one call shares between its tasks (per-chunk partials).
// Buffers grow to the largest request and are then reused, so a training loop allocates only
// during its first step. Not thread-safe across calls: one CpuOps serves one run, one op at a time.
// Within a call, worker w touches only its own buffers, and shared buffers are requested by the
// calling thread before the parallel loop starts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ra::backend::cpu {

enum class WorkerBuffer : int {
  gemm_pack_a,        // packed panels of A (see gemm.h)
  gemm_pack_b,        // packed panels of B
  columns,            // im2col / col2im matrix of one image, or a zero-padded copy of an image
  partial,            // a worker's private partial result (tile, image gradient, lane sum)
  packed_operand,     // an image's operand in the layout a direct convolution reads
  transposed_output,  // an image's result in [pixel][lane] layout, before transposition
  count
};

enum class SharedBuffer : int {
  chunk_partials,     // one partial per fixed-size chunk of a deterministic reduction
  packed_weights,     // the filters in the layout a direct convolution reads
  transposed_result,  // a reduction's result in [tap][filter] layout, before transposition
  flipped_filters,    // the filters of a backward data pass as those of a forward convolution
  count
};

// Offset tables of the direct convolutions (element offsets into an image or a panel).
enum class SharedIndexBuffer : int { row_offsets, depth_offsets, tap_offsets, count };

class ScratchArena {
 public:
  explicit ScratchArena(int workers);

  // At least `floats` floats for `worker` (in [0, workers)); contents unspecified. The pointer
  // stays valid until the next request for the same buffer.
  float* worker(int worker, WorkerBuffer which, std::size_t floats);
  float* shared(SharedBuffer which, std::size_t floats);
  std::int64_t* shared(SharedIndexBuffer which, std::size_t count);

 private:
  static constexpr std::size_t kWorkerBuffers = static_cast<std::size_t>(WorkerBuffer::count);
  static constexpr std::size_t kSharedBuffers = static_cast<std::size_t>(SharedBuffer::count);
  static constexpr std::size_t kIndexBuffers = static_cast<std::size_t>(SharedIndexBuffer::count);

  std::vector<std::array<AlignedVector<float>, kWorkerBuffers>> per_worker_;
  std::array<AlignedVector<float>, kSharedBuffers> shared_;
  std::array<std::vector<std::int64_t>, kIndexBuffers> indices_;
};

}  // namespace ra::backend::cpu
