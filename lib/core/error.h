#pragma once
// Error types of repro-audit. lib/ reports failures only by throwing these;
// apps/repro-audit/main.cpp is the single place that turns them into exit codes (see README, "Exit
// codes").
#include <stdexcept>
#include <string>
#include <vector>

namespace ra {

// Exit codes shared by every subcommand.
enum class ExitCode : int {
  ok = 0,                // reproducible, or as --expect allows
  divergence = 1,        // runs differ where equality was expected
  bad_input = 2,         // malformed spec, bad file, wrong usage
  runtime = 3,           // device or runtime failure
  incomplete = 4,        // an audit folder's planned runs are not all whole (a shard not finished)
  nothing_compared = 5,  // fewer than two same-seed runs: no verdict (unless --allow-empty)
  inconclusive = 6,      // no difference seen, but the control that proves one would be was not
};

// Bad input: a spec, a data file, a trace or a command line the user can fix. Exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One problem found while validating a document, located by its JSON path (e.g.
// "model.layers[2].kernel").
struct Problem {
  std::string path;
  std::string message;
};

// Several input problems found at once (spec validation reports all it can, not the first).
class ValidationError : public InputError {
 public:
  explicit ValidationError(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const noexcept { return problems_; }

 private:
  std::vector<Problem> problems_;
};

// A failure of the machine rather than of the input: device errors, I/O errors on output. Exit 3.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ra
