#include "train/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

namespace ra::train {
namespace {

#ifdef RA_HAVE_CUDA
// The folder of /proc/self/exe, or "" where it cannot be read.
std::string executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Owns nothing: a loaded plugin stays for the life of the process (its code backs the Ops objects
// the trainer holds, and CUDA's libraries are not meant to be unloaded).
CudaPlugin open_plugin(const std::string& path) {
  CudaPlugin plugin;
  plugin.path = path;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    plugin.reason = "the CUDA backend (" + path +
                    ") could not be loaded: " + std::string(why != nullptr ? why : "dlopen failed");
    return plugin;
  }
  auto entry =
      reinterpret_cast<ra_cuda_plugin_entry_fn>(::dlsym(handle, backend::kCudaPluginEntry));
  const backend::CudaPluginApi* api = entry != nullptr ? entry() : nullptr;
  if (api == nullptr || !backend::compatible(*api)) {
    plugin.reason = "the CUDA backend (" + path +
                    ") was built by another build of repro-audit (its interface differs): "
                    "rebuild, or point REPRO_AUDIT_CUDA_PLUGIN at this build's " +
                    kCudaPluginFileName;
    return plugin;
  }
  plugin.api = api;
  return plugin;
}
#endif

CudaPlugin load() {
#ifndef RA_HAVE_CUDA
  CudaPlugin none;
  none.reason = "this build has no CUDA backend (nvcc or cuDNN was not found at build time)";
  return none;
#else
  const char* env = std::getenv("REPRO_AUDIT_CUDA_PLUGIN");
  if (env != nullptr && *env != '\0') return open_plugin(env);  // named: tried, whatever it is
  for (const std::string& path :
       cuda_plugin_candidates("", executable_dir(), RA_CUDA_PLUGIN_BUILD_PATH)) {
    if (is_file(path)) return open_plugin(path);
  }
  CudaPlugin missing;
  missing.reason = std::string("the CUDA backend's plugin (") + kCudaPluginFileName +
                   ") is not installed beside repro-audit, nor in its build tree; set "
                   "REPRO_AUDIT_CUDA_PLUGIN to its path";
  return missing;
#endif
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates(const std::string& from_environment,
                                                const std::string& executable_dir,
                                                const std::string& build_tree_path) {
  if (!from_environment.empty()) return {from_environment};
  std::vector<std::string> paths;
  if (!executable_dir.empty()) paths.push_back(executable_dir + "/" + kCudaPluginFileName);
  if (!build_tree_path.empty()) paths.push_back(build_tree_path);
  return paths;
}

const CudaPlugin& cuda_plugin() {
  static const CudaPlugin plugin = load();
  return plugin;
}

}  // namespace ra::train
