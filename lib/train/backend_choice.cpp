#include "train/backend_choice.h"

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#ifdef RA_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/device.h"
#endif

namespace ra::train {
namespace {

// Why no GPU can be used ("" when one can).
std::string gpu_unusable_reason() {
#ifdef RA_HAVE_CUDA
  const backend::cuda::DeviceInfo info = backend::cuda::query_device();
  return info.usable ? std::string() : info.reason;
#else
  return "this build has no CUDA backend (nvcc or cuDNN was not found at build time)";
#endif
}

}  // namespace

std::string fallback_notice(spec::Device device) {
  if (device != spec::Device::auto_select) return "";
  const std::string reason = gpu_unusable_reason();
  return reason.empty() ? "" : "device auto: no usable GPU (" + reason + "); training on the CPU";
}

BackendChoice make_backend(spec::Device device, int threads, spec::KernelMode mode) {
  BackendChoice choice;
  if (device == spec::Device::cpu) {
    choice.ops = backend::make_cpu_ops(threads);
    return choice;
  }
  const std::string reason = gpu_unusable_reason();
  if (reason.empty()) {
#ifdef RA_HAVE_CUDA
    choice.ops = backend::make_cuda_ops(mode);
    return choice;
#endif
  }
  if (device == spec::Device::cuda) {
    throw RuntimeFailure("device 'cuda' was asked for, but no GPU is usable: " + reason);
  }
  choice.notice = fallback_notice(device);
  choice.ops = backend::make_cpu_ops(threads);
  (void)mode;
  return choice;
}

nlohmann::json gpu_fingerprint() {
#ifdef RA_HAVE_CUDA
  const backend::cuda::DeviceInfo info = backend::cuda::query_device();
  if (info.usable) return backend::cuda::device_fingerprint(info);
#endif
  return {{"available", false}, {"reason", gpu_unusable_reason()}};
}

}  // namespace ra::train
