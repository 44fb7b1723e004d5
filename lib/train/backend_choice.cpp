#include "train/backend_choice.h"

#include "backend/cpu/cpu_fingerprint.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "nn/backend_modes.h"
#include "train/cuda_plugin_loader.h"

namespace ra::train {
namespace {

// Why no GPU can be used ("" when one can). One device query per call: callers keep the answer
// rather than asking again. The CUDA plugin is loaded here, the first time a caller asks.
std::string gpu_unusable_reason() {
  const CudaPlugin& plugin = cuda_plugin();
  if (plugin.api == nullptr) return plugin.reason;
  const backend::cuda::DeviceInfo info = plugin.api->query_device();
  return info.usable ? std::string() : info.reason;
}

// The notice of `auto` falling back to the CPU, from a reason already in hand.
std::string notice_for(spec::Device device, const std::string& reason) {
  if (device != spec::Device::auto_select || reason.empty()) return "";
  return "device auto: no usable GPU (" + reason + "); training on the CPU";
}

}  // namespace

std::string fallback_notice(spec::Device device) {
  if (device != spec::Device::auto_select) return "";
  return notice_for(device, gpu_unusable_reason());
}

BackendChoice make_backend(spec::Device device, int threads, spec::KernelMode mode,
                           std::shared_ptr<const backend::AlgorithmPins> pins) {
  BackendChoice choice;
  if (device == spec::Device::cpu) {
    choice.ops = backend::cpu::make_cpu_ops(threads);
    return choice;
  }
  const std::string reason = gpu_unusable_reason();
  if (reason.empty()) {
    choice.ops = cuda_plugin().api->make_ops(nn::to_backend(mode), std::move(pins));
    return choice;
  }
  if (device == spec::Device::cuda) {
    throw RuntimeFailure("device 'cuda' was asked for, but no GPU is usable: " + reason);
  }
  choice.notice = notice_for(device, reason);
  choice.ops = backend::cpu::make_cpu_ops(threads);
  return choice;
}

nlohmann::json cpu_fingerprint() {
  return backend::cpu::cpu_fingerprint();
}

nlohmann::json gpu_fingerprint() {
  const CudaPlugin& plugin = cuda_plugin();
  if (plugin.api == nullptr) return {{"available", false}, {"reason", plugin.reason}};
  // The whole fingerprint either way: driver and library versions are known without a device and
  // are what one compares first when a machine has none.
  const backend::cuda::DeviceInfo info = plugin.api->query_device();
  nlohmann::json j = plugin.api->device_fingerprint(info);
  j["available"] = info.usable;
  if (!info.usable) {
    // Under the key every build uses ("reason"), once: the trace's name for it is redundant here.
    j.erase("unusable_reason");
    j["reason"] = info.reason;
  }
  return j;
}

}  // namespace ra::train
