#pragma once
// Shared by the [gpu] tests: skip with the reason where no GPU is usable (every machine of this
// project's CI), a check that names a failing CUDA runtime call, and a stream owner.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstddef>

#include "backend/cuda/device.h"

#define RA_SKIP_WITHOUT_USABLE_GPU()                                                   \
  do {                                                                                 \
    const ra::backend::cuda::DeviceInfo gpu_info_ = ra::backend::cuda::query_device(); \
    if (!gpu_info_.usable) {                                                           \
      WARN("skipped: no usable GPU (" << gpu_info_.reason << ")");                     \
      return;                                                                          \
    }                                                                                  \
  } while (false)

#define RA_TEST_CUDA(call)                              \
  do {                                                  \
    const cudaError_t status_ = (call);                 \
    INFO(#call << ": " << cudaGetErrorString(status_)); \
    REQUIRE(status_ == cudaSuccess);                    \
  } while (false)

namespace gpu_test {

// A non-blocking stream for kernel tests: launches on it do not wait for the legacy stream, so a
// kernel that relied on an implicit synchronization would show. For the same reason every fill and
// copy of a test goes through this stream (upload, fill_bytes, download below), never through the
// synchronous cudaMemset/cudaMemcpy: those run on the legacy stream, which a non-blocking stream
// does not wait for, so a fill could land after the kernel that reads it. finish() checks the
// launch error and any fault while the stream ran.
class Stream {
 public:
  Stream() { RA_TEST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void finish() const {
    RA_TEST_CUDA(cudaGetLastError());
    RA_TEST_CUDA(cudaStreamSynchronize(stream_));
  }
  // Queued after the work already on the stream and before what follows; returns when the copy is
  // done, so `host` may be a temporary.
  void upload(void* device, const void* host, std::size_t bytes) const {
    if (bytes == 0) return;
    RA_TEST_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
    finish();
  }
  void fill_bytes(void* device, int byte, std::size_t bytes) const {
    if (bytes == 0) return;
    RA_TEST_CUDA(cudaMemsetAsync(device, byte, bytes, stream_));
  }
  // Waits for everything queued before it (finish()), so the host may read `host` on return.
  void download(void* host, const void* device, std::size_t bytes) const {
    if (bytes != 0) {
      RA_TEST_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
    }
    finish();
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace gpu_test
