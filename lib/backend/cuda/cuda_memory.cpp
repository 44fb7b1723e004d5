#include "backend/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {
namespace {

class CudaDeviceMemory final : public Memory {
 public:
  bool host_accessible() const noexcept override { return false; }
  const char* name() const noexcept override { return "cuda"; }
  // cudaMalloc aligns to at least 256 bytes, more than the 64 the interface promises.
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    RA_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
    return p;
  }
  void deallocate(void* p) noexcept override {
    if (p != nullptr) static_cast<void>(cudaFree(p));
  }
  void zero(void* p, std::size_t bytes) override {
    if (bytes) RA_CUDA_CHECK(cudaMemset(p, 0, bytes));
  }
  // cudaMemcpy between device buffers may return before the copy ends; the interface promises
  // completion, hence the synchronization of the legacy stream it ran on.
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    RA_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    RA_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    RA_CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
    RA_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes) RA_CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
  }
};

}  // namespace

Memory& cuda_device_memory() {
  static CudaDeviceMemory memory;
  return memory;
}

}  // namespace ra::backend::cuda
