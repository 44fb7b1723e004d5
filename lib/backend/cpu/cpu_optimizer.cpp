// Optimizer updates on the CPU backend: the shared per-element rule (optim/rules/update_rules.h)
// over fixed-size chunks. Elementwise, so any split gives the same bits.
//
// The rule's kind is made a compile-time constant per loop (update_span<kind>), so the switch in
// apply_update folds away and each loop vectorises; this unit is compiled with -fno-math-errno
// (lib/CMakeLists.txt), without which GCC keeps sqrtf scalar to set errno. Vector square roots and
// divisions are correctly rounded like the scalar ones, and -ffp-contract=off still forbids FMA
// contraction, so the bits are those of apply_update element by element (tested).
//
// optimizer_update_digested runs the same loop and hashes each chunk of value, grad and states
// (64 KiB: the digest chunk of core/digest.h) right after updating it, from cache.
#include <algorithm>
#include <chrono>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/digest.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

template <optim::RuleKind Kind>
void update_span(const optim::UpdateRule& rule, std::int64_t count, float* __restrict value,
                 const float* __restrict grad, float* __restrict s0, float* __restrict s1) {
  optim::UpdateRule r = rule;
  r.kind = Kind;
  // The kind decides which states the rule touches, so one loop per kind (not one per null
  // pattern of s0 and s1, 10 of the 15 unreachable).
  constexpr bool kS0 = optim::uses_s0(Kind), kS1 = optim::uses_s1(Kind);
  for (std::int64_t j = 0; j < count; ++j) {
    optim::apply_update(r, value[j], grad[j], kS0 ? s0 + j : nullptr, kS1 ? s1 + j : nullptr);
  }
}

void update_chunk(const optim::UpdateRule& rule, std::int64_t count, float* value,
                  const float* grad, float* s0, float* s1) {
  switch (rule.kind) {
    case optim::RuleKind::sgd:
      return update_span<optim::RuleKind::sgd>(rule, count, value, grad, s0, s1);
    case optim::RuleKind::sgd_momentum:
      return update_span<optim::RuleKind::sgd_momentum>(rule, count, value, grad, s0, s1);
    case optim::RuleKind::adam:
      return update_span<optim::RuleKind::adam>(rule, count, value, grad, s0, s1);
    case optim::RuleKind::rmsprop:
      return update_span<optim::RuleKind::rmsprop>(rule, count, value, grad, s0, s1);
    case optim::RuleKind::adadelta:
      return update_span<optim::RuleKind::adadelta>(rule, count, value, grad, s0, s1);
  }
}

// 64 KiB of values: enough work per task, and the digest chunk, so that a task can hash what it
// has just updated.
constexpr std::int64_t kChunk = kDigestChunkBytes / sizeof(float);
static_assert(kChunk * sizeof(float) == kDigestChunkBytes);

// The chunk digests of the tensors of chunk `c` as they are after its update (digests: see
// optim/rules/update_digests.h), with the hashing time added to digests.hash_nanoseconds.
void digest_updated_chunk(std::int64_t c, std::int64_t count, const float* value, const float* grad,
                          const float* s0, const float* s1,
                          const optim::ChunkDigestTargets& digests) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  const auto chunk = static_cast<std::size_t>(c);
  digests.value[chunk] = digest_chunk(value, bytes, chunk);
  digests.grad[chunk] = digest_chunk(grad, bytes, chunk);
  if (s0 != nullptr && digests.s0 != nullptr) digests.s0[chunk] = digest_chunk(s0, bytes, chunk);
  if (s1 != nullptr && digests.s1 != nullptr) digests.s1[chunk] = digest_chunk(s1, bytes, chunk);
  if (digests.hash_nanoseconds != nullptr) {
    digests.hash_nanoseconds->fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count(),
        std::memory_order_relaxed);
  }
}

// The update in chunks on the pool's threads; with `digests`, each chunk hashed right after.
void update_chunks(ThreadPool& pool, const optim::UpdateRule& rule, std::int64_t count,
                   float* value, const float* grad, float* s0, float* s1,
                   const optim::ChunkDigestTargets* digests) {
  const std::int64_t chunks = ceil_div(count, kChunk);
  cpu::parallel_for(pool, chunks, [&](std::int64_t c, int) {
    const std::int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    update_chunk(rule, end - begin, value + begin, grad + begin, s0 ? s0 + begin : nullptr,
                 s1 ? s1 + begin : nullptr);
    if (digests != nullptr) digest_updated_chunk(c, count, value, grad, s0, s1, *digests);
  });
}

}  // namespace

void CpuOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                              const float* grad, float* s0, float* s1) {
  update_chunks(pool_, rule, count, value, grad, s0, s1, nullptr);
}

bool CpuOps::optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count,
                                       float* value, const float* grad, float* s0, float* s1,
                                       const optim::ChunkDigestTargets& digests) {
  update_chunks(pool_, rule, count, value, grad, s0, s1, &digests);
  return true;
}

}  // namespace ra::backend::cpu
