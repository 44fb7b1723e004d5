#pragma once
// Command-line errors at the level of the spec's: what was wrong, and what was probably meant.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ra::app {

// For each unexpected argument that looks like an option, the closest option of the chosen
// subcommand (or the program's), when one is close: "--run: no such option of `run`; did you mean
// --runs?". Other unexpected arguments are named as such.
std::string unexpected_arguments_message(const CLI::App& app,
                                         const std::vector<std::string>& extras);

// Every integer option checks its text first: "--runs: expected an integer, got 'two'" rather
// than a range message about a word (installed on every option of type INT or UINT).
void check_integers_first(CLI::App& app);

}  // namespace ra::app
