#pragma once
// Shared by the [gpu] tests: skip with the reason where no GPU is usable (every machine of this
// project's CI), a check that names a failing CUDA runtime call, and a stream owner.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>

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
// kernel that relied on an implicit synchronization would show. finish() checks the launch error
// and any fault while the stream ran.
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

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace gpu_test
