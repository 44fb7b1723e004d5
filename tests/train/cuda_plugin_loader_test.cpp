// The CUDA backend's plugin loader (train/cuda_plugin_loader.h) and the guard of its interface
// (backend/cuda_plugin_api.h). On this machine, a CUDA build without a GPU: the plugin loads and
// its device query answers "not usable" with CUDA's own reason.
#include <catch2/catch.hpp>

#include "backend/cuda_plugin_api.h"
#include "train/backend_choice.h"
#include "train/cuda_plugin_loader.h"

namespace {

ra::backend::CudaPluginApi whole_api() {
  ra::backend::CudaPluginApi api;
  api.abi_version = ra::backend::kCudaPluginAbiVersion;
  api.device_info_size = sizeof(ra::backend::cuda::DeviceInfo);
  api.pins_size = sizeof(ra::backend::AlgorithmPins);
  api.query_device = []() noexcept { return ra::backend::cuda::DeviceInfo{}; };
  api.device_fingerprint = [](const ra::backend::cuda::DeviceInfo&) { return nlohmann::json(); };
  api.make_ops = [](ra::backend::KernelMode, std::shared_ptr<const ra::backend::AlgorithmPins>) {
    return std::unique_ptr<ra::backend::Ops>();
  };
  return api;
}

}  // namespace

TEST_CASE("the plugin is looked for beside the executable, then in the build tree",
          "[train][cuda_plugin]") {
  using ra::train::cuda_plugin_candidates;
  CHECK(cuda_plugin_candidates("", "/opt/ra/bin", "/src/build/apps/repro-audit/p.so") ==
        std::vector<std::string>{"/opt/ra/bin/librepro-audit-cuda.so",
                                 "/src/build/apps/repro-audit/p.so"});
  // A path in the environment is the only candidate: a wrong one is reported, not passed over.
  CHECK(cuda_plugin_candidates("/x/p.so", "/opt/ra/bin", "/src/p.so") ==
        std::vector<std::string>{"/x/p.so"});
  CHECK(cuda_plugin_candidates("", "", "/src/p.so") == std::vector<std::string>{"/src/p.so"});
  CHECK(cuda_plugin_candidates("", "", "").empty());
}

TEST_CASE("a plugin table of another build is refused", "[train][cuda_plugin]") {
  CHECK(ra::backend::compatible(whole_api()));
  auto api = whole_api();
  api.abi_version += 1;
  CHECK_FALSE(ra::backend::compatible(api));
  api = whole_api();
  api.device_info_size += 8;  // a DeviceInfo with a field this build lacks
  CHECK_FALSE(ra::backend::compatible(api));
  api = whole_api();
  api.pins_size -= 1;
  CHECK_FALSE(ra::backend::compatible(api));
  api = whole_api();
  api.make_ops = nullptr;
  CHECK_FALSE(ra::backend::compatible(api));
}

TEST_CASE("the trainer loads the CUDA backend only as a plugin, and it answers",
          "[train][cuda_plugin]") {
  const ra::train::CudaPlugin& plugin = ra::train::cuda_plugin();
  // Loaded once: the second call is the same object.
  CHECK(&plugin == &ra::train::cuda_plugin());
#ifdef RA_HAVE_CUDA
  // The build tree's copy (this executable is not beside it).
  INFO(plugin.reason);
  REQUIRE(plugin.api != nullptr);
  CHECK(plugin.reason.empty());
  CHECK(plugin.path.find(ra::train::kCudaPluginFileName) != std::string::npos);
  const ra::backend::cuda::DeviceInfo info = plugin.api->query_device();
  // The fingerprint is the plugin's: the runtime's version is known with or without a device.
  const nlohmann::json gpu = ra::train::gpu_fingerprint();
  CHECK(gpu.at("available").get<bool>() == info.usable);
  CHECK(gpu.contains("cuda"));
  if (!info.usable) {
    CHECK_FALSE(info.reason.empty());
    CHECK(gpu.at("reason") == info.reason);
  }
#else
  CHECK(plugin.api == nullptr);
  CHECK(plugin.reason.find("no CUDA backend") != std::string::npos);
#endif
}
