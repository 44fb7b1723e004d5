#include "backend/cuda/digest_queue.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "kernels/digest.cuh"

namespace ra::backend::cuda {

std::vector<DigestItem> digest_items(const std::vector<const Tensor*>& tensors) {
  std::vector<DigestItem> items;
  items.reserve(tensors.size());
  for (const Tensor* t : tensors) items.push_back({t->data(), t->bytes(), DType::f32, t->shape()});
  return items;
}

std::vector<DigestItem> digest_items(const std::vector<MemoryRegion>& regions) {
  std::vector<DigestItem> items;
  items.reserve(regions.size());
  for (const MemoryRegion& r : regions) {
    items.push_back({r.data, static_cast<std::size_t>(r.count) * dtype_bytes(r.dtype), r.dtype,
                     Shape{r.count}});
  }
  return items;
}

std::size_t DigestQueue::queue(cudaStream_t stream, const std::vector<DigestItem>& items) {
  const std::size_t ticket = queued_.size();
  const std::size_t base = chunks_;
  // Job offsets are relative to this call's first chunk: the launch covers its chunks only.
  std::vector<kernels::DigestJob> jobs;
  std::size_t local = 0;
  for (const DigestItem& item : items) {
    const std::size_t chunks = kernels::digest_chunk_count(item.bytes);
    jobs.push_back(kernels::DigestJob{item.data, item.bytes, local});
    queued_.push_back(Queued{item.dtype, item.shape, base + local, chunks});
    local += chunks;
  }
  if (local == 0) return ticket;  // empty items: their digests need no chunk
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

void DigestQueue::queue_download(cudaStream_t stream, xxh3::Hash128* host) const {
  if (chunks_ == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(host, chunk_digests_.data(), chunks_ * sizeof(xxh3::Hash128),
                                cudaMemcpyDeviceToHost, stream));
}

std::vector<Digest128> DigestQueue::take_downloaded(std::span<const xxh3::Hash128> host_chunks) {
  if (host_chunks.size() < chunks_) {
    throw std::logic_error("DigestQueue::take_downloaded: " + std::to_string(host_chunks.size()) +
                           " chunk digests for " + std::to_string(chunks_));
  }
  std::vector<Digest128> out;
  out.reserve(queued_.size());
  for (const Queued& q : queued_) {
    out.push_back(
        digest_from_chunks(q.dtype, q.shape, host_chunks.subspan(q.first_chunk, q.chunks)));
  }
  queued_.clear();
  chunks_ = 0;
  return out;
}

std::vector<Digest128> DigestQueue::take(cudaStream_t stream) {
  std::vector<xxh3::Hash128> chunks(chunks_);
  queue_download(stream, chunks.data());
  RA_CUDA_CHECK(cudaStreamSynchronize(stream));
  return take_downloaded(chunks);
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
