#pragma once
// The small formatting helpers every section of the text report uses (report/text_sections.h).
#include <cstdint>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::report::text {

// Every string of the result that came from a spec or a trace (names, tensors, groups, points,
// environment values) goes through `shown` before it reaches the text: a name holding a newline
// or an ANSI escape must not forge or hide a line of the report (core/printable.h).
std::string shown(const std::string& text);

// printf into a string (at most 1023 bytes: every line of the report is shorter).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// "0,2,5"; past kRunsShown runs, "0,1,...,23 ... (N more)": a report line stays readable for any
// number of runs (JSON has every run).
// A size for a reader: "700 bytes", "2.0 KiB", "89.3 MiB", "1.5 GiB" (one decimal, the largest
// unit it reaches), never "91418.9 KiB".
std::string byte_size(std::uint64_t bytes);

// How the perturbed group (--seeds all) ran its kernels: the engine forces deterministic ones; a
// PyTorch script runs its own settings (the report's first line says which).
std::string perturbed_kernels(const compare::ComparisonResult& r);

inline constexpr std::size_t kRunsShown = 24;
std::string run_list(const std::vector<int>& runs);
// "1 run", "3 runs".
std::string runs_count(std::size_t n);
// The header's words for the runs' mode: the kernel mode of the engine's runs; for PyTorch runs,
// whether the script turned on torch.use_deterministic_algorithms (no mode was chosen).
std::string mode_words(const compare::ComparisonResult& r);

// No line of the text report is longer (docs/report.md): render_text cuts a longer one, saying
// how much it left out, after every list was cut at its own limit.
inline constexpr std::size_t kMaxLineLength = 300;
// `text` with every line longer than kMaxLineLength cut to it, ending "... (N more characters)".
std::string cut_long_lines(const std::string& text);

// The first line of a text section ("" when it has none), and the lines after it.
std::string first_line(const std::string& section);
std::string after_first_line(const std::string& section);
// One line of text as lines of at most `width` characters, broken at spaces, every line after the
// first starting with `indent`; a word longer than a line stays whole (cut_long_lines then cuts
// it). Ends with a newline.
std::string wrapped(const std::string& line, std::size_t width, const std::string& indent);

// A cuDNN algorithm without the prefix its direction already says: "WINOGRAD_NONFUSED", "FFT",
// "ALGO_0" for CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0; any other name as it is.
std::string short_algorithm(const std::string& name);
// "{0,2} FFT_TILING": a run group and its algorithm (short), "(none)" for runs that name none.
std::string algorithm_group_text(const compare::AlgorithmGroup& g);
// What is known of a group's algorithm: "deterministic, autotuned, 0.117..0.125 ms".
std::string algorithm_facts(const compare::AlgorithmGroup& g);
// "conv 128x32x26x26 k64 3x3 s1 p0 backward_data: {0,2} FFT_TILING, {1} FFT (autotuned; all
// deterministic)": one ledger difference in one line.
std::string ledger_difference_text(const compare::LedgerDifference& d);

// "initial weights", "optimizer state", ...
std::string category_title(compare::Category c);

// "before step 0" or "step 17 (epoch 2, batch 3)" (epochs counted from 1 for the reader).
std::string where(const compare::Divergence& d);
// The tensor where a divergence is found, printable: its name, or, at a step recorded with one
// digest per category (a level of detail), "(one digest for all, at this step)".
std::string divergence_tensor(const compare::Divergence& d);

}  // namespace ra::report::text
