#include "backend/cuda/cuda_memory.h"

#include <cstring>
#include <stdexcept>

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {

void* DeviceMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  RA_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void DeviceMemory::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  // A status here (a fault of earlier work) was or will be reported by the call that waits next;
  // a destructor path cannot throw it.
  static_cast<void>(cudaStreamSynchronize(stream_));
  static_cast<void>(cudaFree(p));
}

void DeviceMemory::zero(void* p, std::size_t bytes) {
  if (replaying_) return;  // the replayed graph zeroes it
  if (bytes) RA_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
}

void DeviceMemory::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || replaying_) return;  // the replayed graph copies it
  // Queued, not waited for: the stream orders it with every op and copy (a flatten layer copies
  // twice per step; a wait there would stall the step and make it uncapturable as a graph).
  RA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void DeviceMemory::upload(void* dst, const void* host_src, std::size_t bytes) {
  if (replaying_) throw std::logic_error("an upload inside a replayed step");
  if (bytes == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  // The host source may be freed or rewritten on return.
  RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceMemory::download(void* host_dst, const void* src, std::size_t bytes) {
  if (replaying_) throw std::logic_error("a download inside a replayed step");
  if (bytes == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceMemory::download_all(std::span<const Download> downloads) {
  if (replaying_) throw std::logic_error("a download inside a replayed step");
  bool queued = false;
  for (const Download& d : downloads) {
    if (d.bytes == 0) continue;
    RA_CUDA_CHECK(cudaMemcpyAsync(d.host_dst, d.src, d.bytes, cudaMemcpyDeviceToHost, stream_));
    queued = true;
  }
  if (queued) RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* PinnedHostMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  RA_CUDA_CHECK(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault));
  return p;
}

void PinnedHostMemory::deallocate(void* p) noexcept {
  // The staging buffers are written by downloads that waited before returning: nothing queued
  // still writes to them.
  if (p != nullptr) static_cast<void>(cudaFreeHost(p));
}

void PinnedHostMemory::zero(void* p, std::size_t bytes) {
  if (bytes) std::memset(p, 0, bytes);
}

void PinnedHostMemory::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

void PinnedHostMemory::upload(void* dst, const void* host_src, std::size_t bytes) {
  copy(dst, host_src, bytes);
}

void PinnedHostMemory::download(void* host_dst, const void* src, std::size_t bytes) {
  copy(host_dst, src, bytes);
}

PinnedHostMemory& pinned_host_memory() {
  static PinnedHostMemory memory;
  return memory;
}

}  // namespace ra::backend::cuda
