#pragma once
// Digests queued on a stream and taken all at once (backend/ops.h queue_digests): what lets the
// op recorder hash every input and output of a step's ops on the device, in order with the ops,
// and wait for the GPU and download the chunk digests once, at the step's end, instead of once
// per op call.
//
// Each queue() uploads its jobs and launches one batched digest kernel (kernels/digest.cuh) that
// writes the regions' chunk digests behind those of the earlier calls; nothing waits. take()
// downloads every chunk digest of the queue, waits once, and folds each region's chunks into its
// digest (core/digest.h digest_from_chunks). The chunk buffer keeps what earlier calls wrote: it
// only grows, copying its contents on the stream (a wait, in the first steps only).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "backend/cuda/cuda_resources.h"
#include "backend/ops.h"
#include "core/digest.h"

namespace ra::backend::cuda {

class DigestQueue {
 public:
  // Queues the regions' digests on `stream`; the ticket of the first (the others follow).
  std::size_t queue(cudaStream_t stream, const std::vector<MemoryRegion>& regions);
  // Every queued digest, by ticket; empties the queue. Waits for `stream`.
  std::vector<Digest128> take(cudaStream_t stream);
  std::size_t size() const noexcept { return queued_.size(); }

 private:
  struct Queued {
    DType dtype = DType::f32;
    std::int64_t count = 0;
    std::size_t first_chunk = 0;  // in the queue's chunk digests
    std::size_t chunks = 0;
  };
  // Room for `chunks` chunk digests, keeping the first `chunks_` already written.
  void reserve_chunks(cudaStream_t stream, std::size_t chunks);

  std::vector<Queued> queued_;
  std::size_t chunks_ = 0;  // chunk digests queued so far
  DeviceBuffer chunk_digests_;
  DeviceBuffer jobs_;  // the latest queue() call's jobs (the stream orders their reuse)
};

}  // namespace ra::backend::cuda
