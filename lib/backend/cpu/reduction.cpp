#include "backend/cpu/reduction.h"

namespace ra::backend::cpu {

ChunkPlan plan_chunks(std::int64_t items, std::int64_t partial_size) {
  ChunkPlan plan;
  plan.items = items;
  if (items <= 0) return plan;
  const std::int64_t by_memory =
      std::max<std::int64_t>(1, kPartialBudgetFloats / std::max<std::int64_t>(1, partial_size));
  const std::int64_t wanted = std::min({items, kMaxReductionChunks, by_memory});
  plan.per_chunk = (items + wanted - 1) / wanted;
  plan.chunks = (items + plan.per_chunk - 1) / plan.per_chunk;
  return plan;
}

}  // namespace ra::backend::cpu
