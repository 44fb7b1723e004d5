#include "backend/cpu/reduce/reduction.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

// One spin lock per cache line, so that two stripes never share a line.
struct alignas(64) SpanLock {
  std::atomic<bool> held{false};
};
std::array<SpanLock, kAtomicStripes> span_locks;

SpanLock& lock_of(std::uintptr_t span) {
  // Fibonacci hashing spreads neighbouring spans (and equal offsets in other buffers) over stripes.
  return span_locks[(span * 0x9E3779B97F4A7C15ull) >> 56 & (kAtomicStripes - 1)];
}

bool try_lock(SpanLock& l) {
  // A plain load first: a held line stays shared instead of bouncing between the cores.
  return !l.held.load(std::memory_order_relaxed) &&
         !l.held.exchange(true, std::memory_order_acquire);
}

// Adds values[0, count) into target[0, count) under the lock of `span`, if it can be had now.
bool try_add_span(std::uintptr_t span, float* target, const float* values, std::int64_t count) {
  SpanLock& l = lock_of(span);
  if (!try_lock(l)) return false;
  float* __restrict__ out = target;
  const float* __restrict__ in = values;
  for (std::int64_t j = 0; j < count; ++j) out[j] += in[j];
  l.held.store(false, std::memory_order_release);
  return true;
}

}  // namespace

void atomic_add(float* target, const float* values, std::int64_t count) {
  static_assert((kAtomicStripes & (kAtomicStripes - 1)) == 0, "stripes: a power of two");
  constexpr std::uintptr_t span_bytes = kAtomicSpanFloats * sizeof(float);
  // A span whose lock is busy is skipped and retried after the others, so a lane never waits
  // while it still has work (two lanes adding into the same image would otherwise queue behind
  // each other span by span, and behind a holder that the OS has descheduled).
  struct Pending {
    std::int64_t offset, count;
  };
  constexpr int kMaxPending = 64;
  std::array<Pending, kMaxPending> pending;
  int pending_count = 0;
  std::int64_t i = 0;
  while (i < count) {
    const auto address = reinterpret_cast<std::uintptr_t>(target + i);
    const std::uintptr_t span = address / span_bytes;
    // Up to the end of this address span (a float never straddles spans: both are 4-aligned).
    const std::int64_t n = std::min<std::int64_t>(
        count - i, static_cast<std::int64_t>((span + 1) * span_bytes - address) / 4);
    if (!try_add_span(span, target + i, values + i, n)) {
      if (pending_count < kMaxPending) {
        pending[pending_count++] = {i, n};
      } else {
        while (!try_add_span(span, target + i, values + i, n)) std::this_thread::yield();
      }
    }
    i += n;
  }
  for (int round = 0; pending_count > 0; ++round) {
    int left = 0;
    for (int k = 0; k < pending_count; ++k) {
      const Pending p = pending[k];
      const auto span = reinterpret_cast<std::uintptr_t>(target + p.offset) / span_bytes;
      if (!try_add_span(span, target + p.offset, values + p.offset, p.count)) pending[left++] = p;
    }
    pending_count = left;
    if (pending_count > 0 && round > 16) std::this_thread::yield();
  }
}

ChunkPlan plan_chunks(std::int64_t items, std::int64_t partial_size) {
  ChunkPlan plan;
  plan.items = items;
  if (items <= 0) return plan;
  const std::int64_t by_memory =
      std::max<std::int64_t>(1, kPartialBudgetFloats / std::max<std::int64_t>(1, partial_size));
  const std::int64_t wanted = std::min({items, kMaxReductionChunks, by_memory});
  plan.per_chunk = ceil_div(items, wanted);
  plan.chunks = ceil_div(items, plan.per_chunk);
  return plan;
}

}  // namespace ra::backend::cpu
