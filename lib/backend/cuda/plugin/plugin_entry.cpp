// The one symbol the CUDA plugin exports (backend/cuda_plugin_api.h). Everything else in the
// plugin is hidden: this file is compiled with -fvisibility=hidden and the static libraries it
// links are excluded from its exports.
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/device.h"
#include "backend/cuda_plugin_api.h"

namespace {

std::unique_ptr<ra::backend::Ops> make_ops(ra::backend::KernelMode mode,
                                           std::shared_ptr<const ra::backend::AlgorithmPins> pins) {
  return ra::backend::cuda::make_cuda_ops(mode, std::move(pins));
}

const ra::backend::CudaPluginApi kApi = [] {
  ra::backend::CudaPluginApi api;
  api.abi_version = ra::backend::kCudaPluginAbiVersion;
  api.device_info_size = sizeof(ra::backend::cuda::DeviceInfo);
  api.pins_size = sizeof(ra::backend::AlgorithmPins);
  api.query_device = &ra::backend::cuda::query_device;
  api.device_fingerprint = &ra::backend::cuda::device_fingerprint;
  api.make_ops = &make_ops;
  return api;
}();

}  // namespace

extern "C" __attribute__((visibility("default"))) const ra::backend::CudaPluginApi*
ra_cuda_plugin_v1() {
  return &kApi;
}
