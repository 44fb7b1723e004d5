#include "backend/cuda/cuda_check.h"

#include <utility>

namespace ra::backend::cuda {
namespace {

std::string call_message(const std::string& call, const std::string& location,
                         const std::string& status_name, const std::string& status_text) {
  std::string message = call + " failed at " + location + ": " + status_name;
  if (!status_text.empty() && status_text != status_name) message += " (" + status_text + ")";
  return message;
}

std::string location_of(const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line);
}

}  // namespace

CudaError::CudaError(std::string call, std::string location, std::string status_name,
                     std::string status_text)
    : RuntimeFailure(call_message(call, location, status_name, status_text)),
      call_(std::move(call)),
      location_(std::move(location)),
      status_name_(std::move(status_name)) {}

CudaError::CudaError(const std::string& message) : RuntimeFailure(message) {}

std::string cuda_status_name(cudaError_t status) {
  const char* name = cudaGetErrorName(status);
  return name != nullptr ? name : "CUDA status " + std::to_string(static_cast<int>(status));
}

std::string cuda_status_text(cudaError_t status) {
  const char* text = cudaGetErrorString(status);
  return text != nullptr ? text : std::string();
}

std::string cudnn_status_name(cudnnStatus_t status) {
  const char* name = cudnnGetErrorString(status);
  return name != nullptr ? name : "cuDNN status " + std::to_string(static_cast<int>(status));
}

std::string cublas_status_name(cublasStatus_t status) {
  // A switch rather than cublasGetStatusName: the names must not depend on the installed library.
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "cuBLAS status " + std::to_string(static_cast<int>(status));
}

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(call, location_of(file, line), cuda_status_name(status),
                  cuda_status_text(status));
}

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw CudaError(call, location_of(file, line), cudnn_status_name(status), "");
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(call, location_of(file, line), cublas_status_name(status), "");
}

}  // namespace ra::backend::cuda
