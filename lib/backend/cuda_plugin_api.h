#pragma once
// The CUDA backend as a plugin: a shared library (librepro-audit-cuda.so, built from
// lib/backend/cuda and kernels/) that the trainer loads with dlopen when a run first asks for a
// GPU (train/cuda_plugin_loader.h). A process that never does, `--version`, `validate`,
// `compare`, a CPU run, loads neither it nor cudart, cuBLAS and cuDNN, so it starts in
// milliseconds and runs where CUDA is not installed.
//
// The plugin exports one C symbol, kCudaPluginEntry, returning this table. It is built by the same
// build with the same compiler as the binary that loads it, so the table holds C++ types; the
// version and the sizes below refuse a plugin of another build rather than call into it. The
// plugin keeps its own, hidden, copy of the lib/ code it links (-Wl,--exclude-libs,ALL), so
// nothing it defines can clash with the loader's.
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/algorithm_pins.h"
#include "backend/cuda_device_info.h"
#include "backend/modes.h"
#include "backend/ops.h"

namespace ra::backend {

// Raised whenever the table below changes.
inline constexpr int kCudaPluginAbiVersion = 1;
inline constexpr const char* kCudaPluginEntry = "ra_cuda_plugin_v1";

struct CudaPluginApi {
  int abi_version = 0;
  // sizeof of the types that cross, as the plugin was compiled: a guard against a plugin left
  // beside a binary of another build.
  std::size_t device_info_size = 0;
  std::size_t pins_size = 0;
  // cuda::query_device: never throws.
  cuda::DeviceInfo (*query_device)() noexcept = nullptr;
  // cuda::device_fingerprint.
  nlohmann::json (*device_fingerprint)(const cuda::DeviceInfo& info) = nullptr;
  // make_cuda_ops: throws cuda::CudaError (a RuntimeFailure) when no GPU is usable.
  std::unique_ptr<Ops> (*make_ops)(KernelMode mode,
                                   std::shared_ptr<const AlgorithmPins> pins) = nullptr;
};

// Whether a table the plugin returned is one this build can call (pure: tested on the host).
inline bool compatible(const CudaPluginApi& api) {
  return api.abi_version == kCudaPluginAbiVersion &&
         api.device_info_size == sizeof(cuda::DeviceInfo) &&
         api.pins_size == sizeof(AlgorithmPins) && api.query_device != nullptr &&
         api.device_fingerprint != nullptr && api.make_ops != nullptr;
}

}  // namespace ra::backend

// The entry point's type: extern "C", so that dlsym finds it by its plain name.
extern "C" {
using ra_cuda_plugin_entry_fn = const ra::backend::CudaPluginApi* (*)();
}
