#pragma once
// --cuda-graphs on|off, shared by train and run (backend/ops.h begin_step: each full training
// step on a GPU captured once as a CUDA graph and replayed after).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backend/step_launch.h"

namespace ra::app {

inline void add_cuda_graphs_option(CLI::App& cmd, bool& graphs) {
  cmd.add_option_function<std::string>(
         "--cuda-graphs", [&graphs](const std::string& v) { graphs = v == "on"; },
         "on: run each full training step on a GPU as one CUDA graph, captured once and replayed "
         "(the same kernels in the same order, so the same bits; not yet measured on a GPU); off "
         "(default): op by op. Steps through --trace-ops, and on the CPU, always run op by op")
      ->check(CLI::IsMember({"on", "off"}));
}

// How a run's steps were launched, as train --json and bench --json print it (the trace's end
// record has the same fields: docs/trace-format.md).
inline nlohmann::json step_launch_json(const backend::StepLaunchCounts& l) {
  return {{"eager", l.eager},
          {"capture", l.capture},
          {"replay", l.replay},
          {"eager_reasons", l.eager_reasons}};
}

}  // namespace ra::app
