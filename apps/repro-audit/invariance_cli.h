#pragma once
// The batch-invariance sweep's options, shared by `exec --invariance` and `run --invariance`, and
// its report (docs/invariance.md).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "report_output.h"
#include "trace/invariance.h"

namespace ra::app {

struct InvarianceCli {
  bool enabled = false;
  std::string sizes;  // "" = the default sizes up to max_size
  int max_size = 64;
  std::vector<std::string> positions{"first", "middle", "last"};
  std::vector<std::string> neighbours{"batch"};
  bool no_control = false;
};

void add_invariance_options(CLI::App& cmd, InvarianceCli& o);
trace::InvariancePlan invariance_plan(const InvarianceCli& o);

// InputError naming the options given with --invariance that a sweep does not take.
void refuse_with_invariance(const CLI::App& cmd, const std::vector<std::string>& options);
// InputError "WHY: --a, --b does not apply to it" when any of `options` was given.
void refuse_options(const CLI::App& cmd, const std::vector<std::string>& options,
                    const std::string& why);

// The sweep's finding as text on stdout (or the JSON alone with --json -), and the report files;
// returns the exit status (compare::findings_exit_code).
int emit_invariance_report(const trace::InvarianceSweep& sweep, bool expect_invariant,
                           const std::string& rerun_command, const ReportFiles& files);

}  // namespace ra::app
