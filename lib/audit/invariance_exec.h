#pragma once
// `repro-audit exec --invariance -- CMD ...` (docs/invariance.md): the user's command runs once,
// with the sweep's plan in REPRO_AUDIT_INVARIANCE; its call of repro_audit.invariance(model,
// batch) runs the sweep and writes the sweep's file, which is read back whole here.
#include <filesystem>
#include <string>
#include <vector>

#include "trace/invariance.h"

namespace ra::audit {

struct InvarianceExecOptions {
  std::vector<std::string> command;
  trace::InvariancePlan plan;
  std::filesystem::path out_dir;  // the sweep's file and the command's output go here
  double timeout_seconds = 0.0;   // > 0: the command is stopped after that long (exit 3)
};

struct InvarianceExecResult {
  trace::InvarianceSweep sweep;
  std::filesystem::path sweep_file, log_file;
};

// RuntimeFailure when the command fails (its last lines in the message) or ends without writing
// a whole sweep (it never called repro_audit.invariance); InputError when the file it wrote is
// not a whole sweep.
InvarianceExecResult run_invariance_command(const InvarianceExecOptions& options);

// The plan as REPRO_AUDIT_INVARIANCE carries it, `out` the file the script writes.
std::string invariance_plan_json(const trace::InvariancePlan& plan,
                                 const std::filesystem::path& out);

}  // namespace ra::audit
