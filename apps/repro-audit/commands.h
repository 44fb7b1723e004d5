#pragma once
// One registration function per subcommand (one file each). Each adds its CLI11 subcommand and
// sets `run` to the code that executes it and returns the process exit code. Errors are thrown;
// main.cpp alone turns them into exit codes.
#include <CLI/CLI.hpp>

#include <functional>

namespace ra::app {

using CommandRun = std::function<int()>;

void register_train(CLI::App& app, CommandRun& run);
void register_validate(CLI::App& app, CommandRun& run);
void register_run(CLI::App& app, CommandRun& run);
void register_compare(CLI::App& app, CommandRun& run);
void register_env(CLI::App& app, CommandRun& run);
void register_bench(CLI::App& app, CommandRun& run);

}  // namespace ra::app
