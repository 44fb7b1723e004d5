#pragma once
// The two reduction physics of the CPU backend (see ops.h and docs/determinism.md):
//
//   deterministic    - the reduced items (images, batch rows) are cut into chunks whose size is a
//                      function of the data sizes only (plan_chunks). Each chunk's partial is
//                      summed in a fixed order by whichever task gets it, then the partials are
//                      added in chunk order. The thread count decides who computes a partial, never
//                      a value.
//   nondeterministic - min(threads, chunks) lanes pull chunks from a shared counter (so a fast lane
//                      takes more), each sums what it took into its own partial, then adds that
//                      partial into the output with atomic float adds in completion order: the
//                      physics of GPU atomics. Bits may change from run to run and with threads.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/runtime/parallel_for.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend/modes.h"
#include "core/integer_math.h"
#include "core/thread_pool.h"

namespace ra::backend::cpu {

// `items` reduced items cut into `chunks` chunks of `per_chunk` items (the last may be shorter).
struct ChunkPlan {
  std::int64_t items = 0;
  std::int64_t per_chunk = 1;
  std::int64_t chunks = 0;

  std::int64_t begin(std::int64_t chunk) const { return chunk * per_chunk; }
  std::int64_t end(std::int64_t chunk) const { return std::min(items, (chunk + 1) * per_chunk); }
};

// At most kMaxReductionChunks chunks (enough tasks to balance 2-16 threads), and at most
// kPartialBudgetFloats floats of partials (chunks * partial_size; 16 MiB), never fewer than one
// chunk. A function of the sizes only, so the reduction tree is the same for any thread count.
// Example: conv2d 32->64 k3 weight gradient, batch 128: partial 64*32*9 = 18432 floats -> 32
// chunks of 4 images, 2.4 MiB of partials.
inline constexpr std::int64_t kMaxReductionChunks = 32;
inline constexpr std::int64_t kPartialBudgetFloats = std::int64_t(1) << 22;
ChunkPlan plan_chunks(std::int64_t items, std::int64_t partial_size);

// *target += value as one atomic read-modify-write (a compare-and-swap loop on x86-64).
inline void atomic_add(float* target, float value) {
  std::atomic_ref<float>(*target).fetch_add(value, std::memory_order_relaxed);
}

// target[i] += values[i] for i in [0, count), atomic per span of up to kAtomicSpanFloats floats
// (aligned by address): the span is locked (one of kAtomicStripes spin locks, picked by address),
// added with one vectorisable pass, unlocked. Each element still receives each partial through an
// atomic read-modify-write, in the order in which the adding tasks get there (completion order), so
// the bits vary from run to run exactly as with one CAS per float; what changes is the price. A CAS
// is a locked instruction of tens of cycles even uncontended, and cannot be vectorised; a span pays
// one lock per 4 KiB and plain vector adds, over the 21 M floats of atomic adds in a Keras MNIST
// step (batch 128). The same coarsening as float4 atomicAdd on sm_90 GPUs. Holds one lock at a
// time: no deadlock. Concurrent writers of `target` must all go through this function (or the
// scalar one on elements no span add touches at the same time).
inline constexpr std::int64_t kAtomicSpanFloats = 1024;
inline constexpr std::size_t kAtomicStripes = 256;
void atomic_add(float* target, const float* values, std::int64_t count);

// Elementwise loops are cut into blocks of this many elements (64 KiB of floats per task).
inline constexpr std::int64_t kElementBlock = 16384;
inline std::int64_t block_count(std::int64_t count) {
  return ceil_div(count, kElementBlock);
}

// The sum of one output plane in 8 interleaved lanes (lane l sums elements j = l mod 8 in order),
// combined in a fixed tree: a fixed order that depends on the plane size only, so deterministic,
// and one the compiler vectorises; a single running sum is a chain of dependent adds, one float per
// add latency (4 cycles) over the 4.7 M floats of the Keras MNIST conv2 gradient at batch 128.
// plane_sum's tree over its 8 lane sums lane(0) .. lane(7), added by add(a, b): the order stated
// once for plane_sum and the portable column sums of unpool_transposed.cpp (the AVX-512 column
// sums write it out in vectors).
template <class Lane, class Add>
auto plane_sum_tree(const Lane& lane, const Add& add) {
  return add(add(add(lane(0), lane(4)), add(lane(2), lane(6))),
             add(add(lane(1), lane(5)), add(lane(3), lane(7))));
}

inline float plane_sum(const float* plane, std::int64_t count) {
  constexpr std::int64_t kLanes = 8;
  float lanes[kLanes] = {};
  const std::int64_t whole = count - count % kLanes;
  for (std::int64_t j = 0; j < whole; j += kLanes) {
    for (std::int64_t l = 0; l < kLanes; ++l) lanes[l] += plane[j + l];
  }
  for (std::int64_t j = whole; j < count; ++j) lanes[j - whole] += plane[j];
  return plane_sum_tree([&](int l) { return lanes[l]; }, [](float a, float b) { return a + b; });
}

// sums[i] += plane_sum(planes + i * count, count) for i in [0, planes), four planes at a time: the
// same lanes and tree per plane, but four planes' chains of adds run side by side: one plane's
// alone waits on each add (8 floats per add latency), which bounded a conv's bias gradient.
inline void add_plane_sums(const float* planes, std::int64_t count, std::int64_t plane_count,
                           float* sums) {
  constexpr std::int64_t kLanes = 8, kPlanes = 4;
  const std::int64_t whole = count - count % kLanes;
  std::int64_t i = 0;
  for (; i + kPlanes <= plane_count; i += kPlanes) {
    const float* first = planes + i * count;
    float lanes[kPlanes][kLanes] = {};
    for (std::int64_t j = 0; j < whole; j += kLanes) {
      for (std::int64_t p = 0; p < kPlanes; ++p) {
        for (std::int64_t l = 0; l < kLanes; ++l) lanes[p][l] += first[p * count + j + l];
      }
    }
    for (std::int64_t p = 0; p < kPlanes; ++p) {
      for (std::int64_t j = whole; j < count; ++j) lanes[p][j - whole] += first[p * count + j];
      sums[i + p] += plane_sum_tree([&](int l) { return lanes[p][l]; },
                                    [](float a, float b) { return a + b; });
    }
  }
  for (; i < plane_count; ++i) sums[i] += plane_sum(planes + i * count, count);
}

// out[0, size) = the sum over chunks c in [0, chunks) of contribution(c), where
// accumulate(c, partial, worker) ADDS chunk c's contribution into partial[0, size) in an order
// fixed by c (worker only selects that worker's scratch buffers, and accumulate must leave
// WorkerBuffer::partial alone: the lanes keep their sums there). Both modes described above.
// An accumulate that also takes a bool, accumulate(c, partial, worker, fresh), is told when
// partial holds no sums yet (fresh: its contents are undefined, to be overwritten, not added to)
// and so spares the pass that would zero it: a conv filter gradient's partial is up to 590 KB.
template <class Accumulate>
void reduce_chunks(ThreadPool& pool, ScratchArena& scratch, KernelMode mode, std::int64_t chunks,
                   std::int64_t size, float* out, const Accumulate& accumulate) {
  constexpr bool kTakesFresh = std::is_invocable_v<Accumulate, std::int64_t, float*, int, bool>;
  // The chunk's contribution into partial, zeroed first unless accumulate writes it when fresh.
  const auto add_chunk = [&](std::int64_t chunk, float* partial, int worker, bool fresh) {
    if constexpr (kTakesFresh) {
      accumulate(chunk, partial, worker, fresh);
    } else {
      if (fresh) std::fill_n(partial, size, 0.0f);
      accumulate(chunk, partial, worker);
    }
  };
  if (size <= 0) return;
  const auto usize = static_cast<std::size_t>(size);
  if (chunks <= 0) {
    std::fill_n(out, size, 0.0f);
    return;
  }
  if (mode != KernelMode::nondeterministic) {
    float* partials = scratch.shared(SharedBuffer::chunk_partials, usize * chunks);
    parallel_for(pool, chunks, [&](std::int64_t chunk, int worker) {
      add_chunk(chunk, partials + chunk * size, worker, true);
    });
    // out[i] = ((p0[i] + p1[i]) + p2[i]) + ...: chunk order, each element written by one task.
    parallel_for(pool, block_count(size), [&](std::int64_t block, int) {
      const std::int64_t begin = block * kElementBlock;
      const std::int64_t end = std::min(size, begin + kElementBlock);
      std::copy(partials + begin, partials + end, out + begin);
      for (std::int64_t chunk = 1; chunk < chunks; ++chunk) {
        const float* partial = partials + chunk * size;
        for (std::int64_t i = begin; i < end; ++i) out[i] += partial[i];
      }
    });
    return;
  }
  std::fill_n(out, size, 0.0f);
  std::atomic<std::int64_t> next_chunk{0};
  const std::int64_t lanes = std::min<std::int64_t>(pool.threads(), chunks);
  scratch.reserve_workers(WorkerBuffer::partial, usize);
  parallel_for(pool, lanes, [&](std::int64_t, int worker) {
    float* partial = scratch.worker(worker, WorkerBuffer::partial, usize);
    bool took_any = false;
    for (std::int64_t chunk = next_chunk.fetch_add(1); chunk < chunks;
         chunk = next_chunk.fetch_add(1)) {
      add_chunk(chunk, partial, worker, !took_any);
      took_any = true;
    }
    if (took_any) atomic_add(out, partial, size);
  });
}

}  // namespace ra::backend::cpu
