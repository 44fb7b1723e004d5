#pragma once
// --cuda-graphs on|off, shared by train and run (backend/ops.h begin_step: each full training
// step on a GPU captured once as a CUDA graph and replayed after).
#include <CLI/CLI.hpp>

namespace ra::app {

inline void add_cuda_graphs_option(CLI::App& cmd, bool& graphs) {
  cmd.add_option_function<std::string>(
         "--cuda-graphs", [&graphs](const std::string& v) { graphs = v == "on"; },
         "on: run each full training step on a GPU as one CUDA graph, captured once and replayed "
         "(the same kernels in the same order, so the same bits; not yet measured on a GPU); off "
         "(default): op by op. Steps through --trace-ops, and on the CPU, always run op by op")
      ->check(CLI::IsMember({"on", "off"}));
}

}  // namespace ra::app
