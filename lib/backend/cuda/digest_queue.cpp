#include "backend/cuda/digest_queue.h"

#include <algorithm>
#include <span>

#include "backend/cuda/cuda_check.h"
#include "kernels/digest.cuh"

namespace ra::backend::cuda {

std::size_t DigestQueue::queue(cudaStream_t stream, const std::vector<MemoryRegion>& regions) {
  const std::size_t ticket = queued_.size();
  const std::size_t base = chunks_;
  // Job offsets are relative to this call's first chunk: the launch covers its chunks only.
  std::vector<kernels::DigestJob> jobs;
  std::size_t local = 0;
  for (const MemoryRegion& r : regions) {
    const std::size_t bytes = static_cast<std::size_t>(r.count) * dtype_bytes(r.dtype);
    const std::size_t chunks = kernels::digest_chunk_count(bytes);
    jobs.push_back(kernels::DigestJob{r.data, bytes, local});
    queued_.push_back(Queued{r.dtype, r.count, base + local, chunks});
    local += chunks;
  }
  if (local == 0) return ticket;  // empty regions: their digests need no chunk
  reserve_chunks(stream, base + local);
  jobs_.reserve(jobs.size() * sizeof(kernels::DigestJob));
  // From pageable memory: staged before the call returns, so `jobs` may go; the stream orders
  // this upload after the previous call's kernel, which read the same device buffer.
  RA_CUDA_CHECK(cudaMemcpyAsync(jobs_.data(), jobs.data(), jobs.size() * sizeof(kernels::DigestJob),
                                cudaMemcpyHostToDevice, stream));
  kernels::digest_chunks_batched(stream, jobs_.as<kernels::DigestJob>(),
                                 static_cast<int>(jobs.size()), local,
                                 chunk_digests_.as<xxh3::Hash128>() + base);
  RA_CUDA_CHECK(cudaGetLastError());
  chunks_ = base + local;
  return ticket;
}

std::vector<Digest128> DigestQueue::take(cudaStream_t stream) {
  std::vector<xxh3::Hash128> chunks(chunks_);
  if (chunks_ > 0) {
    RA_CUDA_CHECK(cudaMemcpyAsync(chunks.data(), chunk_digests_.data(),
                                  chunks_ * sizeof(xxh3::Hash128), cudaMemcpyDeviceToHost, stream));
  }
  RA_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<Digest128> out;
  out.reserve(queued_.size());
  for (const Queued& q : queued_) {
    out.push_back(digest_from_chunks(
        q.dtype, Shape{q.count},
        std::span<const xxh3::Hash128>(chunks.data() + q.first_chunk, q.chunks)));
  }
  queued_.clear();
  chunks_ = 0;
  return out;
}

void DigestQueue::reserve_chunks(cudaStream_t stream, std::size_t chunks) {
  const std::size_t bytes = chunks * sizeof(xxh3::Hash128);
  if (chunk_digests_.size() >= bytes) return;
  DeviceBuffer grown(std::max(bytes, 2 * chunk_digests_.size()));
  if (chunks_ > 0) {
    RA_CUDA_CHECK(cudaMemcpyAsync(grown.data(), chunk_digests_.data(),
                                  chunks_ * sizeof(xxh3::Hash128), cudaMemcpyDeviceToDevice,
                                  stream));
  }
  // The old block is freed once the device is idle (DeviceBuffer::release): after the copy.
  chunk_digests_ = std::move(grown);
}

}  // namespace ra::backend::cuda
