#pragma once
// Shared by the [gpu] tests: skip with the reason where no GPU is usable (every machine of this
// project's CI), and a check that names a failing CUDA runtime call.
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
