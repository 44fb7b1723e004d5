#pragma once
// The arguments of a training step that change from step to step (dropout's draw: the step; the
// optimizer's rule: its learning rate and bias corrections), as a step captured as a CUDA graph
// reads them: from device memory, copied there on the stream from a page-locked slot the host
// wrote. The graph holds those copies as nodes that read the slots when it runs, so each replay
// runs with the values its host pass wrote before the launch (cuda_ops.h begin_step). Eager steps
// pass the values as kernel arguments and only count the room a graph step would need.
//
// Slots are handed out in call order from the start of each step, so a replayed step, which makes
// the captured step's calls in the same order, writes the same slots. The buffers grow only
// before a capture begins (reserve): inside a captured or replayed step nothing may allocate.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "backend/cuda/cuda_resources.h"

namespace ra::backend::cuda {

class StepScalars {
 public:
  StepScalars() = default;
  StepScalars(const StepScalars&) = delete;
  StepScalars& operator=(const StepScalars&) = delete;

  // From the first slot again.
  void begin_step() noexcept { used_ = 0; }
  // Room for at least `bytes` of slots (waits for `stream` before freeing smaller buffers).
  // Before a capture begins, never inside one.
  void reserve(cudaStream_t stream, std::size_t bytes);
  // An eager step's argument: counted, not written (the kernel takes it by value).
  void note(std::size_t bytes) noexcept;
  // A graph step's argument: `bytes` of `value` into the next slot and, with `queue_copy`, its
  // copy to the device slot queued on `stream` (a replayed step queues nothing: its graph holds
  // the copy). Returns the device slot. CudaError when the slots are full.
  const void* put(cudaStream_t stream, const void* value, std::size_t bytes, bool queue_copy);
  template <class T>
  const T* put(cudaStream_t stream, const T& value, bool queue_copy) {
    return static_cast<const T*>(put(stream, &value, sizeof(T), queue_copy));
  }
  std::size_t used() const noexcept { return used_; }  // bytes of slots this step, so far

 private:
  struct FreePinned {
    void operator()(void* p) const noexcept;
  };

  std::unique_ptr<void, FreePinned> host_;
  DeviceBuffer device_;
  std::size_t capacity_ = 0, used_ = 0;
};

}  // namespace ra::backend::cuda
