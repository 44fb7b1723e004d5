// `repro-audit doctor -- CMD ARGS...`: one run of the user's training command, and every obstacle
// to identical runs it shows, with its fix (audit/doctor.h, docs/doctor.md). The exit status is
// the findings' (compare::findings_exit_code): 0 when nothing stands in the way (precision notes
// at most), 1 otherwise; 3 when the run fails, as exec's.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "audit/doctor.h"
#include "audit/exec_audit.h"
#include "cli_help.h"
#include "commands.h"
#include "compare/doctor_checks.h"
#include "default_folder.h"
#include "json_output.h"
#include "option_checks.h"
#include "report/doctor_section.h"

namespace ra::app {
namespace {

struct DoctorCommandOptions {
  audit::DoctorOptions doctor;
  std::string out;
  bool json = false;
};

int run_doctor_command(DoctorCommandOptions& o) {
  audit::DoctorOptions& d = o.doctor;
  d.name = audit::exec_name(d.command);
  d.out_dir = o.out.empty() ? std::filesystem::path("repro-audit-out") / (d.name + "-doctor")
                            : std::filesystem::path(o.out);
  d.tool_version = REPRO_AUDIT_VERSION;
  move_earlier_default_audit(d.out_dir, !o.out.empty(), rundir::FolderUse::fresh, false);
  spdlog::info("doctor: one run of the command, the ops of its first {} steps, into {}", d.steps,
               d.out_dir.string());
  const compare::DoctorReport doctor = audit::run_doctor(d);
  const std::string text =
      o.json ? json_text(report::doctor_json(doctor)) + "\n" : report::doctor_text(doctor);
  std::fputs(text.c_str(), stdout);
  return compare::findings_exit_code(doctor.findings);  // 0 clear, 1 obstacles
}

}  // namespace

void register_doctor(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<DoctorCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Run your training command once and list what stands in the way of identical runs (seeds, "
      "determinism switches, loader workers, ops nondeterministic on CUDA, cuDNN engines), each "
      "with its fix (docs/doctor.md)");
  cmd->footer(
      "Exit codes: 0 nothing stands in the way, 1 obstacles listed, 2 bad input or usage, 3 the "
      "run failed (README, \"Exit codes\")");
  cmd->add_option("command", o->doctor.command, "The command and its arguments, after --")
      ->required()
      ->expected(-1);
  cmd->add_option("--steps", o->doctor.steps, "Record the ops of the first N steps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", o->doctor.seed, "The run's seed (REPRO_AUDIT_SEED)")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Folder for the run (default repro-audit-out/<name>-doctor)");
  cmd->add_flag("--json", o->json, "Print the findings as JSON (and nothing else) on stdout");
  cmd->add_option("--timeout", o->doctor.timeout_seconds,
                  "Stop the run still going after SECONDS: exit 3")
      ->check(finite_positive_number());
  cmd->callback([&run, o] { run = [o] { return run_doctor_command(*o); }; });
}

}  // namespace ra::app
