#pragma once
// Finds and loads the CUDA backend's plugin (backend/cuda_plugin_api.h) the first time a caller
// asks, once per process. Where it is looked for, first found wins:
//   1. $REPRO_AUDIT_CUDA_PLUGIN, a path (set: nothing else is tried, so a wrong path is named);
//   2. beside the running executable (the build's apps/repro-audit/, an install's bin/);
//   3. the build tree this binary was built in (the test executables, in build/tests/).
// A failure is kept, with a reason a person can act on: the library dlopen could not find
// ("libcudnn.so.9: cannot open shared object file"), a plugin of another build, or a build
// without CUDA.
#include <string>
#include <vector>

#include "backend/cuda_plugin_api.h"

namespace ra::train {

struct CudaPlugin {
  const backend::CudaPluginApi* api = nullptr;  // null when it could not be loaded
  std::string path;                             // the file loaded, or the last one tried
  std::string reason;                           // why api is null; empty when loaded
};

// Loads on the first call (thread-safe); the plugin stays loaded until the process ends.
const CudaPlugin& cuda_plugin();

// The candidate paths in the order above, from their inputs (pure: tested on the host). Empty
// inputs are skipped.
std::vector<std::string> cuda_plugin_candidates(const std::string& from_environment,
                                                const std::string& executable_dir,
                                                const std::string& build_tree_path);

// The plugin's file name.
inline constexpr const char* kCudaPluginFileName = "librepro-audit-cuda.so";

}  // namespace ra::train
