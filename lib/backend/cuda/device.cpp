#include "backend/cuda/device.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>

#include "backend/cuda/cuda_check.h"
#include "kernels/probe.cuh"

// The configure step passes CMAKE_CUDA_ARCHITECTURES (lib/CMakeLists.txt); a build without it
// still compiles and says so.
#ifndef RA_CUDA_ARCHITECTURES
#define RA_CUDA_ARCHITECTURES "unknown"
#endif

namespace ra::backend::cuda {
namespace {

// Volta (7.0) is the oldest architecture cuDNN 9 supports.
constexpr int kMinComputeMajor = 7;

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "unknown";
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void probe_kernels(DeviceInfo& info);

void query_into(DeviceInfo& info) {
  // Library versions first: they need no device and belong in the fingerprint either way.
  int runtime = 0, driver = 0;
  info.runtime_version =
      cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_string(runtime) : "unknown";
  // Without a driver this reports 0 (success), which cuda_version_string writes as "none".
  info.driver_version =
      cudaDriverGetVersion(&driver) == cudaSuccess ? cuda_version_string(driver) : "unknown";
  const std::size_t cudnn = cudnnGetVersion();
  info.cudnn_version = cudnn_version_string(cudnn);
  info.cublas_version = cublas_version();

  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    info.reason = cuda_status_text(status) + " (cudaGetDeviceCount: " + cuda_status_name(status) +
                  "; driver supports CUDA " + info.driver_version + ", runtime is CUDA " +
                  info.runtime_version + ")";
    return;
  }
  if (count == 0) {
    info.reason = "no CUDA device found (cudaGetDeviceCount = 0)";
    return;
  }
  cudaDeviceProp prop{};
  const cudaError_t prop_status = cudaGetDeviceProperties(&prop, 0);
  if (prop_status != cudaSuccess) {
    info.reason = "cudaGetDeviceProperties(device 0): " + cuda_status_name(prop_status) + " (" +
                  cuda_status_text(prop_status) + ")";
    return;
  }
  info.name = prop.name;
  info.compute_capability_major = prop.major;
  info.compute_capability_minor = prop.minor;
  info.memory_bytes = prop.totalGlobalMem;
  if (prop.major < kMinComputeMajor) {
    info.reason = info.name + " has compute capability " + std::to_string(prop.major) + "." +
                  std::to_string(prop.minor) + "; cuDNN 9 needs 7.0 or newer";
    return;
  }
  // Headers and library of different major versions disagree on enums and structs.
  if (cudnn / 10000 != CUDNN_MAJOR) {
    info.reason = "cuDNN library " + info.cudnn_version + " does not match the headers (" +
                  std::to_string(CUDNN_MAJOR) + ".x) this program was built with";
    return;
  }
  probe_kernels(info);
}

// Last: the checks above need no context, this one creates it. Device 0 is the one the backend
// uses (CudaOps sets it too).
void probe_kernels(DeviceInfo& info) {
  const cudaError_t set = cudaSetDevice(0);
  const cudaError_t status = set != cudaSuccess ? set : kernels::probe_kernel_image();
  if (status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice) {
    info.reason = no_kernel_image_reason(info.name, info.compute_capability_major,
                                         info.compute_capability_minor, built_cuda_architectures(),
                                         cuda_status_name(status));
    return;
  }
  if (status != cudaSuccess) {
    info.reason = std::string(set != cudaSuccess ? "cudaSetDevice(0)" : "probing a kernel") +
                  " on " + info.name + ": " + cuda_status_name(status) + " (" +
                  cuda_status_text(status) + ")";
    return;
  }
  info.usable = true;
}

}  // namespace

const char* built_cuda_architectures() noexcept {
  return RA_CUDA_ARCHITECTURES;
}

std::string no_kernel_image_reason(const std::string& name, int major, int minor,
                                   const std::string& built_for, const std::string& status_name) {
  const std::string capability = std::to_string(major) + "." + std::to_string(minor);
  return name + " (compute capability " + capability +
         ") cannot run this build's kernels: built for CUDA architectures " + built_for +
         " (cudaFuncGetAttributes on a probe kernel: " + status_name +
         "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major * 10 + minor);
}

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cudnn_version_string(std::size_t version) {
  if (version >= 90000) {
    return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
           std::to_string(version % 100);
  }
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 100) + "." +
         std::to_string(version % 100);
}

DeviceInfo query_device() noexcept {
  DeviceInfo info;
  try {
    query_into(info);
  } catch (const std::exception& e) {  // only std::bad_alloc from strings can get here
    info.usable = false;
    info.reason = std::string("querying the CUDA device failed: ") + e.what();
  }
  return info;
}

nlohmann::json device_fingerprint(const DeviceInfo& info) {
  nlohmann::json j;
  if (info.name.empty()) {
    j["gpu"] = nullptr;
  } else {
    j["gpu"] = info.name;
    j["compute_capability"] = std::to_string(info.compute_capability_major) + "." +
                              std::to_string(info.compute_capability_minor);
    j["memory_bytes"] = info.memory_bytes;
  }
  if (!info.usable) j["unusable_reason"] = info.reason;
  j["driver"] = info.driver_version;
  j["cuda"] = info.runtime_version;
  j["cudnn"] = info.cudnn_version;
  j["cublas"] = info.cublas_version;
  return j;
}

}  // namespace ra::backend::cuda
