#pragma once
// The options run and exec share about what a trace records.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ra::app {

// --tensor-digests (trace/tensor_digests.h): repeatable, each value comma-separated values.
void add_tensor_digests_option(CLI::App& cmd, std::vector<std::string>& values);

}  // namespace ra::app
