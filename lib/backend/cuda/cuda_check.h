#pragma once
// One check per library (CUDA runtime, cuDNN, cuBLAS), each naming the failing call, its file:line
// and the status by name and text:
//     RA_CUDA_CHECK(cudaMalloc(&p, bytes));
//   -> CudaError "cudaMalloc(&p, bytes) failed at lib/backend/cuda/x.cpp:12:
//   cudaErrorMemoryAllocation
//      (out of memory)"
// CudaError is a RuntimeFailure: a device failure is exit code 3, never bad input.
// The status-name functions need no device (cudaGetErrorName and cudnnGetErrorString are host
// table look-ups), so they are tested on GPU-less machines.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "core/error.h"

namespace ra::backend::cuda {

class CudaError : public RuntimeFailure {
 public:
  // A failed library call: `call` is its source text, `location` "file:line".
  CudaError(std::string call, std::string location, std::string status_name,
            std::string status_text);
  // A failure that is not one call's status (no usable device, a pinned algorithm the shape does
  // not support): the whole message.
  explicit CudaError(const std::string& message);

  const std::string& call() const noexcept { return call_; }
  const std::string& location() const noexcept { return location_; }
  const std::string& status_name() const noexcept { return status_name_; }

 private:
  std::string call_, location_, status_name_;
};

// "cudaErrorMemoryAllocation", "CUDNN_STATUS_NOT_SUPPORTED", "CUBLAS_STATUS_NOT_INITIALIZED"; an
// unknown value gives "<library> status <number>".
std::string cuda_status_name(cudaError_t status);
std::string cuda_status_text(cudaError_t status);  // "out of memory"
std::string cudnn_status_name(cudnnStatus_t status);
std::string cublas_status_name(cublasStatus_t status);

// Throw CudaError unless the status is success. Called by the macros below.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace ra::backend::cuda

#define RA_CUDA_CHECK(call) ::ra::backend::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define RA_CUDNN_CHECK(call) ::ra::backend::cuda::check_cudnn((call), #call, __FILE__, __LINE__)
#define RA_CUBLAS_CHECK(call) ::ra::backend::cuda::check_cublas((call), #call, __FILE__, __LINE__)
