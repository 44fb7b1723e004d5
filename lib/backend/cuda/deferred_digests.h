#pragma once
// Digests of tensors queued after a training step and read at the next synchronize
// (Ops::digest_when_done): the trace recorder's digests of a step's gradients, weights and
// optimizer state. The device hashes them while the host goes on; their chunk digests are copied
// to page-locked memory by the stream itself, so that nothing waits for them in particular (the
// next batch's upload and the next step's end wait for the stream anyway), and resolve() then
// only folds chunks on the host.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/digest_queue.h"

namespace ra::backend::cuda {

class DeferredDigests {
 public:
  // Queues the items' digests and the copy of their chunk digests back on `stream`; `out`
  // receives them, in order, at resolve() (held until then).
  void queue(cudaStream_t stream, const std::vector<DigestItem>& items,
             std::shared_ptr<std::vector<Digest128>> out);
  // Fills every queued `out`. The stream must have finished the work queued before (the caller
  // has waited for it).
  void resolve();
  bool pending() const noexcept { return !targets_.empty(); }

 private:
  struct Target {
    std::shared_ptr<std::vector<Digest128>> out;
    std::size_t count;
  };
  DigestQueue queue_;
  PinnedHostBuffer readback_;  // every chunk digest queued since the last resolve()
  std::vector<Target> targets_;
};

}  // namespace ra::backend::cuda
