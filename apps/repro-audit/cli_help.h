#pragma once
// Command-line errors at the level of the spec's: what was wrong, and what was probably meant.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ra::app {

// For each unexpected argument that looks like an option, the closest option of the chosen
// subcommand (or the program's), when one is close: "--run: no such option of `run`; did you mean
// --runs?". Other unexpected arguments are named as such, unless they follow an unknown option
// (its value, or words CLI11 could no longer place). `given`: the process's arguments; exec with
// an unknown option and no "--" among them is told to put its command after "--".
std::string unexpected_arguments_message(const CLI::App& app,
                                         const std::vector<std::string>& extras,
                                         const std::vector<std::string>& given);

// When no subcommand was chosen and a word was given, that word named with the closest
// subcommand ("exce: no such subcommand of repro-audit; did you mean exec?"); else "".
std::string unknown_subcommand_message(const CLI::App& app);

// The exit codes, for the --help of the subcommands that audit (run, exec, compare).
std::string exit_codes_text();

// Every integer option checks its text first, one check for all of them: "--runs: expected a
// whole number, got 'two'" rather than a range message about a word, and a number outside its
// type's range refused, never wrapped or clamped ("--seed -1", "--seed 18446744073709551616" and
// "--seed 1e23" would become 2^64-1 in CLI11's conversion). Installed on every option of type INT
// (a sign and digits, within 64 bits) or UINT (digits only, within 0..2^64-1); the option's own
// range check, if any, runs after it.
void check_integers_first(CLI::App& app);

}  // namespace ra::app
