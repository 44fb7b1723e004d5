#include "core/tensor_set_pool.h"

#include <stdexcept>
#include <string>

namespace ra {

TensorSetPool::TensorSetPool(Memory& memory)
    : memory_(&memory), free_(std::make_shared<FreeList>()) {
  if (!memory.host_accessible()) {
    throw std::invalid_argument("TensorSetPool in " + std::string(memory.name()) +
                                " memory, which the host cannot read");
  }
}

std::shared_ptr<TensorSetPool::Set> TensorSetPool::acquire(const std::vector<Shape>& shapes) {
  std::unique_ptr<Set> set;
  {
    std::lock_guard lock(free_->mutex);
    if (!free_->sets.empty()) {
      set = std::move(free_->sets.back());
      free_->sets.pop_back();
    } else {
      ++free_->made;
    }
  }
  if (!set) set = std::make_unique<Set>();
  // Allocation outside the lock: a set being returned meanwhile (the writer thread) waits for no
  // cudaHostAlloc.
  set->resize(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor& t = (*set)[i];
    if (&t.memory() != memory_) {  // a tensor the set did not hold before
      t = Tensor(shapes[i], *memory_);
    } else {
      t.resize(shapes[i]);
    }
  }
  // The deleter shares the free list, not the pool: a set may outlive the pool (then it is freed).
  return std::shared_ptr<Set>(set.release(), [free = free_](Set* returned) {
    std::unique_ptr<Set> owned(returned);
    std::lock_guard lock(free->mutex);
    free->sets.push_back(std::move(owned));
  });
}

std::size_t TensorSetPool::sets_made() const {
  std::lock_guard lock(free_->mutex);
  return free_->made;
}

std::size_t TensorSetPool::sets_free() const {
  std::lock_guard lock(free_->mutex);
  return free_->sets.size();
}

}  // namespace ra
