#pragma once
// What GPU this process would run on, and whether it can: the facts for the trace header's
// environment fingerprint and for refusing to start (exit 3) with a reason a person can act on.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/cuda_device_info.h"

namespace ra::backend::cuda {

// Device 0 of this process (CUDA_VISIBLE_DEVICES chooses which physical GPU that is). Never
// throws: every failure becomes usable = false with the reason (no driver, no device, a
// compute capability below 7.0, a cuDNN whose major version differs from the headers', a build
// with no kernel code the device can run: the last is found by probing a kernel,
// kernels/probe.cuh, which creates the device's context).
DeviceInfo query_device() noexcept;

// The CUDA architectures this binary's kernels were compiled for (CMAKE_CUDA_ARCHITECTURES at
// configure time, commas for semicolons: "80,90").
const char* built_cuda_architectures() noexcept;

// The reason for a device the build has no kernel code for (pure, tested on the host):
// "NVIDIA X (compute capability 12.0) cannot run this build's kernels: built for CUDA
//  architectures 80,90 (cudaFuncGetAttributes on a probe kernel: cudaErrorNoKernelImageForDevice);
//  rebuild with -DCMAKE_CUDA_ARCHITECTURES=120".
std::string no_kernel_image_reason(const std::string& name, int major, int minor,
                                   const std::string& built_for, const std::string& status_name);

// {"gpu", "compute_capability", "memory_bytes", "driver", "cuda", "cudnn", "cublas"}; an unusable
// device gives "gpu": null and "unusable_reason".
nlohmann::json device_fingerprint(const DeviceInfo& info);

// Version encodings, as strings (pure functions, tested on the CPU):
// CUDA runtime/driver 13000 -> "13.0", 12040 -> "12.4"; 0 -> "none".
std::string cuda_version_string(int version);
// cuDNN 9 encodes major * 10000 + minor * 100 + patch: 91900 -> "9.19.0". (cuDNN 8 used
// major * 1000 + minor * 100 + patch: 8907 -> "8.9.7".)
std::string cudnn_version_string(std::size_t version);

}  // namespace ra::backend::cuda
