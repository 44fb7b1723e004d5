// The user's command, run once for a batch-invariance sweep (audit/invariance_exec.h).
#include "audit/invariance_exec.h"

#include <nlohmann/json.hpp>
#include <system_error>

#include "core/error.h"
#include "core/process.h"

namespace ra::audit {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSweepName = "invariance.jsonl";
constexpr const char* kLogName = "invariance-command.log";

// The command's last lines, on one line, for a message.
std::string tail_of(const fs::path& log) {
  const std::string tail = last_lines_joined(log, 8);
  return tail.empty() ? "it printed nothing" : "its last lines: " + tail;
}

}  // namespace

std::string invariance_plan_json(const trace::InvariancePlan& plan, const fs::path& out) {
  return nlohmann::json{{"out", fs::absolute(out).string()},
                        {"sizes", plan.sizes},
                        {"positions", plan.positions},
                        {"neighbours", plan.neighbours},
                        {"control", plan.control}}
      .dump();
}

InvarianceExecResult run_invariance_command(const InvarianceExecOptions& o) {
  if (o.command.empty()) {
    throw InputError("exec --invariance: no command given (repro-audit exec --invariance -- CMD)");
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec)
    throw InputError("cannot create output folder " + o.out_dir.string() + ": " + ec.message());
  InvarianceExecResult r;
  r.sweep_file = o.out_dir / kSweepName;
  r.log_file = o.out_dir / kLogName;
  // A sweep left by an earlier command is not this command's.
  fs::remove(r.sweep_file, ec);
  ProcessLimits limits;
  limits.timeout_seconds = o.timeout_seconds;
  const ProcessResult result = run_process(
      o.command, {{"REPRO_AUDIT_INVARIANCE", invariance_plan_json(o.plan, r.sweep_file)}},
      r.log_file, limits);
  if (!result.ok()) {
    throw RuntimeFailure("the command " + result.describe() + "; " + tail_of(r.log_file) +
                         " (its output: " + r.log_file.string() + ")");
  }
  if (!fs::exists(r.sweep_file, ec)) {
    throw RuntimeFailure(
        "the command ended without a sweep: it never called "
        "repro_audit.invariance(model, batch) (docs/invariance.md); " +
        tail_of(r.log_file) + " (its output: " + r.log_file.string() + ")");
  }
  r.sweep = trace::read_invariance_sweep(r.sweep_file);
  return r;
}

}  // namespace ra::audit
