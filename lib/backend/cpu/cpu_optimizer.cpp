// Optimizer updates on the CPU backend: the shared per-element rule over fixed-size chunks.
// Elementwise, so any split gives the same bits.
#include <algorithm>

#include "backend/cpu/cpu_ops.h"

namespace ra::backend {

void CpuOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                              const float* grad, float* s0, float* s1) {
  constexpr std::int64_t kChunk = 1 << 14;  // 64 KiB of values: enough work per task
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
  pool_.parallel_for(chunks, [&](std::int64_t c, int) {
    const std::int64_t end = std::min(count, (c + 1) * kChunk);
    for (std::int64_t j = c * kChunk; j < end; ++j) {
      optim::apply_update(rule, value[j], grad[j], s0 ? s0 + j : nullptr, s1 ? s1 + j : nullptr);
    }
  });
}

}  // namespace ra::backend
