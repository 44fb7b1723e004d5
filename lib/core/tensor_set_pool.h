#pragma once
// Sets of host tensors reused from one weight snapshot to the next (record/run_observers.h). A
// snapshot taken behind the run copies the weights into a set, hands the set to the writer
// thread, and the set comes back here when its last owner drops it, on whichever thread: the
// next snapshot copies into buffers allocated once. That matters for page-locked staging memory
// (Ops::staging_memory), whose allocation pins every page, a cost of the order of the copy.
//
// The pool makes a set only when none is free, so it holds as many as were ever out at once: for
// the snapshot writer, the snapshots waiting or being written plus the one being taken. A set
// dropped after the pool is gone is freed, not returned (the free list is shared with the sets).
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "core/memory.h"
#include "core/tensor.h"

namespace ra {

class TensorSetPool {
 public:
  using Set = std::vector<Tensor>;

  // `memory` must be host-accessible (std::invalid_argument otherwise) and outlive every set.
  explicit TensorSetPool(Memory& memory);

  // A set of tensors shaped `shapes`, in the pool's memory: a free set, each tensor resized (a
  // tensor reallocates only when its buffer is too small), or a new one. Contents unspecified.
  std::shared_ptr<Set> acquire(const std::vector<Shape>& shapes);

  std::size_t sets_made() const;  // sets allocated so far
  std::size_t sets_free() const;  // of which back in the pool now

 private:
  struct FreeList {
    std::mutex mutex;
    std::vector<std::unique_ptr<Set>> sets;
    std::size_t made = 0;
  };
  Memory* memory_;
  std::shared_ptr<FreeList> free_;
};

}  // namespace ra
