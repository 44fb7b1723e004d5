#include "backend/cpu/runtime/scratch.h"

#include <stdexcept>

namespace ra::backend::cpu {
namespace {

template <class Vector>
auto* grown(Vector& buffer, std::size_t count) {
  // Replace rather than resize: the old contents are not needed, so there is nothing to copy.
  if (buffer.size() < count) buffer = Vector(count);
  return buffer.data();
}

}  // namespace

ScratchArena::ScratchArena(int workers) : per_worker_(static_cast<std::size_t>(workers)) {}

float* ScratchArena::worker(int worker, WorkerBuffer which, std::size_t floats) {
  auto& buffer = per_worker_.at(static_cast<std::size_t>(worker))[static_cast<std::size_t>(which)];
  if (buffer.size() < floats) late_growths_.fetch_add(1, std::memory_order_relaxed);
  return grown(buffer, floats);
}

void ScratchArena::reserve_workers(WorkerBuffer which, std::size_t floats) {
  for (auto& buffers : per_worker_) grown(buffers[static_cast<std::size_t>(which)], floats);
}

float* ScratchArena::shared(SharedBuffer which, std::size_t floats) {
  return grown(shared_[static_cast<std::size_t>(which)], floats);
}

std::int64_t* ScratchArena::shared(SharedIndexBuffer which, std::size_t count) {
  return grown(indices_[static_cast<std::size_t>(which)], count);
}

}  // namespace ra::backend::cpu
