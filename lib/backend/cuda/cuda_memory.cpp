#include "backend/cuda/cuda_memory.h"

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
  if (bytes) RA_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
}

void DeviceMemory::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceMemory::upload(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  // The host source may be freed or rewritten on return.
  RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void DeviceMemory::download(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  RA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  RA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace ra::backend::cuda
