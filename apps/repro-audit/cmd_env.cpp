// `repro-audit env`: the environment fingerprint a trace would record on this machine (CPU,
// compiler, build, OS; the GPU and its libraries when the build has the CUDA backend), so two
// machines can be compared before an audit.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/printable.h"
#include "core/thread_pool.h"
#include "json_output.h"
#include "record/environment.h"
#include "train/backend_choice.h"

namespace ra::app {
namespace {

struct EnvOptions {
  bool json = false;
};

int run_env(const EnvOptions& o) {
  nlohmann::json doc = record::environment_fingerprint(hardware_threads(), "cpu");
  doc["gpu"] = train::gpu_fingerprint();
  if (o.json) {
    std::printf("%s\n", json_text(doc).c_str());
    return 0;
  }
  for (const auto& [key, value] : doc.items()) {
    // 15: the longest key, "cpu_gemm_kernel".
    // Values come from the machine (/proc/cpuinfo, driver strings): printed escaped all the same.
    const std::string text =
        value.is_string() ? value.get<std::string>()
                          : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%-15s %s\n", printable(key).c_str(), printable(text).c_str());
  }
  return 0;
}

}  // namespace

void register_env(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<EnvOptions>();
  CLI::App* cmd = app.add_subcommand("env", "Print this machine's environment fingerprint");
  cmd->add_flag("--json", o->json, "Print it as JSON (and nothing else) on stdout");
  cmd->callback([&run, o] { run = [o] { return run_env(*o); }; });
}

}  // namespace ra::app
