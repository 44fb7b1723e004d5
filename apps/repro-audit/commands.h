#pragma once
// One registration function per subcommand (one file each). Each adds its CLI11 subcommand and
// sets `run` to the code that executes it and returns the process exit code. Errors are thrown;
// main.cpp alone turns them into exit codes.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ra::app {

using CommandRun = std::function<int()>;

void register_train(CLI::App& app, CommandRun& run);
void register_validate(CLI::App& app, CommandRun& run);
void register_run(CLI::App& app, CommandRun& run);
void register_compare(CLI::App& app, CommandRun& run);
void register_env(CLI::App& app, CommandRun& run);
void register_bench(CLI::App& app, CommandRun& run);
void register_exec(CLI::App& app, CommandRun& run);
void register_python_path(CLI::App& app, CommandRun& run);
void register_doctor(CLI::App& app, CommandRun& run);
// `completion bash|zsh|fish`: a script made from `app`'s subcommands and options (register last).
void register_completion(CLI::App& app, CommandRun& run);

// The process's arguments after the program name, as given (set by main before parsing): what a
// report quotes back to the user as the command to run next.
const std::vector<std::string>& command_arguments();
void set_command_arguments(std::vector<std::string> arguments);

}  // namespace ra::app
