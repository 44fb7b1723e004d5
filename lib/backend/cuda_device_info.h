#pragma once
// What the CUDA backend says of the GPU this process would run on. Its own header, free of CUDA
// headers, because it crosses the CUDA plugin's boundary (backend/cuda_plugin_api.h): the trainer
// asks for it without linking CUDA.
#include <cstddef>
#include <string>

namespace ra::backend::cuda {

struct DeviceInfo {
  bool usable = false;
  std::string reason;  // why not usable ("CUDA driver version is insufficient ..."), else empty
  std::string name;    // "NVIDIA H100 80GB HBM3"; empty when no device
  int compute_capability_major = 0, compute_capability_minor = 0;
  std::string driver_version;   // CUDA version the driver supports, "13.0"; "none" without one
  std::string runtime_version;  // CUDA runtime linked, "13.0"
  std::string cudnn_version;    // "9.19.0" (the library loaded, not the header compiled against)
  std::string cublas_version;   // "13.0.2"
  std::size_t memory_bytes = 0;
};

}  // namespace ra::backend::cuda
