#pragma once
// Digests hashed on the device, queued on a stream and taken all at once: what lets the op
// recorder hash every input and output of a step's ops on the device, in order with the ops, and
// wait for the GPU and download the chunk digests once, at the step's end, instead of once per op
// call (backend/ops.h queue_digests); what digest() runs as one launch and one download; and
// what the trace recorder's digests of a step run as, read at the next step's end
// (deferred_digests.h).
//
// Each queue() uploads its jobs and launches one batched digest kernel (kernels/digest.cuh) that
// writes the items' chunk digests behind those of the earlier calls; nothing waits. take()
// downloads every chunk digest of the queue, waits once, and folds each item's chunks into its
// digest (core/digest.h digest_from_chunks). The chunk buffer keeps what earlier calls wrote: it
// only grows, copying its contents on the stream (a wait, in the first steps only).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <vector>

#include "backend/cuda/cuda_resources.h"
#include "backend/ops.h"
#include "core/digest.h"

namespace ra::backend::cuda {

// What a digest hashes: `bytes` at `data` (device memory), digested as `dtype` and `shape`.
struct DigestItem {
  const void* data = nullptr;
  std::size_t bytes = 0;
  DType dtype = DType::f32;
  Shape shape;
};
// Tensors keep their shapes; flat regions are digested as shape [count].
std::vector<DigestItem> digest_items(const std::vector<const Tensor*>& tensors);
std::vector<DigestItem> digest_items(const std::vector<MemoryRegion>& regions);

class DigestQueue {
 public:
  // Queues the items' digests on `stream`; the ticket of the first (the others follow).
  std::size_t queue(cudaStream_t stream, const std::vector<DigestItem>& items);
  // Queues on `stream` the copy of every chunk digest queued so far into `host`, which holds
  // chunk_count() entries (page-locked memory, so that nothing waits); nothing waits.
  void queue_download(cudaStream_t stream, xxh3::Hash128* host) const;
  // Every queued digest, by ticket, from `host_chunks` (chunk_count() entries) where a download
  // has put them and the stream has finished since; empties the queue.
  std::vector<Digest128> take_downloaded(std::span<const xxh3::Hash128> host_chunks);
  // Every queued digest, by ticket: downloads, waits for `stream`; empties the queue.
  std::vector<Digest128> take(cudaStream_t stream);
  std::size_t size() const noexcept { return queued_.size(); }
  std::size_t chunk_count() const noexcept { return chunks_; }

 private:
  struct Queued {
    DType dtype = DType::f32;
    Shape shape;
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
