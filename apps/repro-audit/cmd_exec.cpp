// `repro-audit exec --runs N -- CMD ARGS...`: an audit of the user's own training command, which
// records its runs with the PyTorch recorder (lib/python, docs/pytorch.md). The same report and
// exit codes as `run`.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "audit/exec_audit.h"
#include "audit/invariance_exec.h"
#include "cli_help.h"
#include "commands.h"
#include "core/error.h"
#include "default_folder.h"
#include "invariance_cli.h"
#include "option_checks.h"
#include "report_output.h"
#include "rerun_command.h"
#include "run_label.h"
#include "rundir/interrupt_state.h"
#include "rundir/report_paths.h"
#include "rundir/shard.h"
#include "trace/op_window.h"
#include "trace/tensor_digests.h"
#include "trace_options.h"

namespace ra::app {
namespace {

struct ExecCommandOptions {
  audit::ExecOptions exec;
  std::vector<std::string> command;
  std::string seeds = "same";
  std::string out;
  std::string json_path, junit_path, html_path;
  std::string expect;
  std::string shard;  // "" = every run in this process
  std::string trace_ops;
  std::vector<std::string> tensor_digests;
  std::string keep_op;
  std::vector<std::int64_t> interrupt_at;
  std::string resume_arg;
  bool overwrite = false, resume = false, allow_empty = false;
  InvarianceCli invariance;
  std::string versus;  // --versus: program B's command
  double floor_margin = 10.0;
};

// The options of an audit of runs, which a sweep does not take.
const std::vector<std::string> kAuditOnlyOptions = {
    "--runs",         "--seeds",       "--seed",           "--jobs",
    "--shard",        "--trace-ops",   "--tensor-digests", "--keep-op",
    "--interrupt-at", "--resume-arg",  "--resume",         "--overwrite",
    "--tolerance",    "--allow-empty", "--versus",         "--floor-margin"};

// The options of one program's audit, which --versus (two programs' audits it plans itself) does
// not take.
const std::vector<std::string> kOneProgramOptions = {
    "--seeds",        "--shard",      "--tensor-digests", "--keep-op",
    "--interrupt-at", "--resume-arg", "--resume",         "--allow-empty"};

// `exec --invariance`: the command once, with the plan; the sweep's report.
int run_exec_invariance(const ExecCommandOptions& o) {
  audit::InvarianceExecOptions e;
  e.command = o.command;
  e.plan = invariance_plan(o.invariance);
  e.out_dir = o.out.empty() ? std::filesystem::path("repro-audit-out") /
                                  (audit::exec_name(o.command) + "-invariance")
                            : std::filesystem::path(o.out);
  e.timeout_seconds = o.exec.timeout_seconds;
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path}, {{e.out_dir}, {}});
  spdlog::info("batch-invariance sweep of {}: {} batch size(s) up to {}, in {}",
               e.out_dir.filename().string(), e.plan.sizes.size(), e.plan.sizes.back(),
               e.out_dir.string());
  const audit::InvarianceExecResult r = audit::run_invariance_command(e);
  return emit_invariance_report(r.sweep, parse_expect(o.expect).value_or(true), "",
                                {o.json_path, o.junit_path, o.html_path});
}

// libra_device_digest.so beside this binary (lib/CMakeLists.txt writes it there), if it is there.
std::filesystem::path device_digest_library() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path library = self.parent_path() / "libra_device_digest.so";
  return std::filesystem::is_regular_file(library, ec) ? library : std::filesystem::path{};
}

// What an audit of the command (program A under --versus) takes from the command line whichever
// audit it is: the command, its name, the default folder (under `suffix` of the name), the
// folder's use, the op window, the device-digest library and the tool's version.
audit::ExecOptions program_options(const ExecCommandOptions& o, const std::string& suffix) {
  audit::ExecOptions e = o.exec;
  e.command = o.command;
  e.name = audit::exec_name(e.command);
  e.device_digest_library = device_digest_library();
  e.out_dir = o.out.empty() ? std::filesystem::path("repro-audit-out") / (e.name + suffix)
                            : std::filesystem::path(o.out);
  e.folder_use = o.resume      ? rundir::FolderUse::resume
                 : o.overwrite ? rundir::FolderUse::overwrite
                               : rundir::FolderUse::fresh;
  e.tool_version = REPRO_AUDIT_VERSION;
  if (!o.trace_ops.empty()) e.trace_ops = trace::parse_op_window(o.trace_ops);
  return e;
}

// `exec --versus CMD_B -- CMD_A`: both programs' audits in OUT/a and OUT/b, and the report of B
// against the floor (docs/equivalence.md, "The floor").
int run_exec_versus(ExecCommandOptions& o) {
  if (o.expect != "equivalent") {
    throw InputError("--versus judges B against the floor: give --expect equivalent with it");
  }
  audit::VersusOptions v;
  v.a = program_options(o, "-versus");  // --resume is refused with --versus before this
  v.command_b = audit::parse_versus(o.versus);
  v.margin = o.floor_margin;
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path}, {{v.a.out_dir}, {}});
  spdlog::info("{} against {}: {} run(s) of A a group (--seeds all), one of B, in {}", v.a.name,
               audit::exec_name(v.command_b), v.a.runs, v.a.out_dir.string());
  audit::AuditProgress hooks;
  hooks.notice = [](const std::string& message) { spdlog::warn("{}", message); };
  return emit_report(audit::run_versus_audit(v, hooks), {o.json_path, o.junit_path, o.html_path});
}

int run_exec(ExecCommandOptions& o) {
  if (o.invariance.enabled) return run_exec_invariance(o);
  if (!o.versus.empty()) return run_exec_versus(o);
  if (o.expect == "equivalent") {
    throw InputError(
        "--expect equivalent judges two programs: give program B with --versus "
        "'CMD_B' (or compare A B FLOOR... --expect equivalent)");
  }
  o.exec = program_options(o, "");
  audit::ExecOptions& e = o.exec;
  e.seeds = audit::seed_policy_from_string(o.seeds);
  e.expect_identical = parse_expect(o.expect);
  if (!o.shard.empty()) e.shard = rundir::parse_shard(o.shard, rundir::process_environment());
  if (const auto plan = trace::parse_tensor_digest_plan(o.tensor_digests); !plan.all()) {
    e.tensor_digests = plan;
  }
  std::sort(o.interrupt_at.begin(), o.interrupt_at.end());
  o.interrupt_at.erase(std::unique(o.interrupt_at.begin(), o.interrupt_at.end()),
                       o.interrupt_at.end());
  e.interrupt_at = o.interrupt_at;
  if (!e.interrupt_at.empty() && (!o.trace_ops.empty() || !o.keep_op.empty())) {
    throw InputError("--interrupt-at does not combine with --trace-ops or --keep-op yet");
  }
  e.resume_arg = rundir::parse_resume_arg(o.resume_arg, !e.interrupt_at.empty());
  if (!o.keep_op.empty()) {
    e.keep_op = audit::parse_kept_op(o.keep_op);
    // The kept op's step must be recorded: by default the window is that step alone.
    const std::string step = std::to_string(e.keep_op->step);
    if (!e.trace_ops) {
      e.trace_ops = trace::parse_op_window(step + ":" + std::to_string(e.keep_op->step + 1));
    }
    if (!e.trace_ops->contains(e.keep_op->step)) {
      throw InputError("--keep-op " + o.keep_op + ": step " + step + " is outside --trace-ops " +
                       o.trace_ops);
    }
  }
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path}, {{e.out_dir}, {}});
  for (const std::string& f : {o.json_path, o.junit_path, o.html_path}) {
    if (!f.empty() && f != "-") e.report_files.push_back(f);
  }
  audit::AuditProgress hooks;
  hooks.run_started = [](int run, int of) { spdlog::info("{} started", run_label(run, of)); };
  hooks.run_finished = [](int run, const std::filesystem::path& trace) {
    spdlog::info("run {} done: {}", run, trace.string());
  };
  hooks.notice = [](const std::string& message) { spdlog::warn("{}", message); };
  move_earlier_default_audit(e.out_dir, !o.out.empty(), e.folder_use, e.shard.has_value());
  spdlog::info("auditing {}: {} run(s) of the command, traces in {}", e.name, e.runs,
               e.out_dir.string());
  // Inputs of the comparison, not patches of its result (issue 60).
  e.allow_empty = o.allow_empty;
  e.rerun_command = [out = e.out_dir](const std::string& window, bool tensor_digests) {
    return rerun_with_window(window, out, tensor_digests);
  };
  audit::AuditResult result = audit::run_exec_audit(e, hooks);
  if (result.shard) return print_shard_outcome(*result.shard, e.out_dir);
  return emit_report(result.comparison, {o.json_path, o.junit_path, o.html_path});
}

// --versus and its margin (docs/equivalence.md, "The floor").
void add_versus_options(CLI::App& cmd, ExecCommandOptions& o) {
  cmd.add_option("--versus", o.versus,
                 "Program B, 'CMD ARGS' (words split at spaces, no shell quoting), which should "
                 "compute what the command (A) does up to rounding: A runs --runs times a group "
                 "with --seeds all into OUT/a, B once into OUT/b, and B is judged against the "
                 "floor A's runs measure (--expect equivalent; docs/equivalence.md)");
  cmd.add_option("--floor-margin", o.floor_margin,
                 "With --versus: B is beyond the floor where its loss's distance from A's "
                 "exceeds this many floors")
      ->check(finite_positive_number());
}

// The sweep's options, and the callback that runs the audit or, with --invariance, the sweep.
void add_exec_callback(CLI::App* cmd, CommandRun& run,
                       const std::shared_ptr<ExecCommandOptions>& o) {
  add_invariance_options(*cmd, o->invariance);
  cmd->callback([&run, o, cmd] {
    run = [o, cmd] {
      // Here, not in the parse: main turns what a run throws into its exit code.
      if (o->invariance.enabled) refuse_with_invariance(*cmd, kAuditOnlyOptions);
      if (!o->versus.empty() && !o->invariance.enabled) {
        refuse_options(*cmd, kOneProgramOptions, "--versus audits two programs");
      }
      if (o->versus.empty() && cmd->count("--floor-margin") > 0) {
        throw InputError("--floor-margin is for --versus (and compare --expect equivalent)");
      }
      return run_exec(*o);
    };
  });
}

}  // namespace

void register_exec(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<ExecCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exec",
      "Audit your own training command: run it N times (it records with the PyTorch "
      "recorder, docs/pytorch.md), compare the runs bit for bit, report");
  cmd->footer(exit_codes_text());
  cmd->add_option("command", o->command, "The command and its arguments, after --")
      ->required()
      ->expected(-1);
  cmd->add_option("--runs", o->exec.runs, "Number of runs (per seed group)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--seeds", o->seeds,
                  "same: every run REPRO_AUDIT_SEED=--seed; different: a derived seed per run; "
                  "both: N of each; all: also N with one bit of one initial weight flipped "
                  "(REPRO_AUDIT_PERTURB; docs/statistics.md)")
      ->check(CLI::IsMember({"same", "different", "both", "all"}));
  cmd->add_option("--seed", o->exec.seed, "The same-seed group's seed (REPRO_AUDIT_SEED)")
      ->capture_default_str();
  cmd->add_option("--jobs", o->exec.jobs, "Runs at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--out", o->out, "Folder for the traces (default repro-audit-out/<name>)");
  cmd->add_option("--json", o->json_path, "Also write the JSON report to FILE ('-': stdout only)");
  cmd->add_option("--html", o->html_path, "Also write the HTML report to FILE");
  cmd->add_option("--junit", o->junit_path, "Also write a JUnit XML report to FILE");
  cmd->add_option("--expect", o->expect,
                  "identical (default): exit 1 unless bitwise identical; any: never exit 1; "
                  "equivalent (with --versus): exit 1 when B is beyond the floor")
      ->check(CLI::IsMember({"identical", "any", "equivalent"}));
  add_versus_options(*cmd, *o);
  cmd->add_option("--tolerance", o->exec.loss_tolerance,
                  "Relative tolerance of the within-tolerance verdict on final losses")
      ->capture_default_str()
      ->check(finite_positive_number());
  auto* overwrite = cmd->add_flag("--overwrite", o->overwrite,
                                  "Replace the audit in --out (only repro-audit's own files)");
  cmd->add_flag("--resume", o->resume, "Finish the audit in --out: run only the missing runs")
      ->excludes(overwrite);
  cmd->add_option("--shard", o->shard,
                  "Run only shard K of N's runs (run p belongs to shard p mod N) into --out, "
                  "shared with the other shards; auto: from a Slurm job array, auto/N: from a "
                  "Kubernetes Indexed Job (docs/scale-out.md). No report: compare --out once "
                  "every shard has finished");
  cmd->add_option(
      "--trace-ops", o->trace_ops,
      "Also record every aten op of the steps in WINDOW (N for step N alone, A:B, A: or all; "
      "REPRO_AUDIT_TRACE_OPS for the recorder), so the report names the op and module where runs "
      "first part (docs/pytorch.md, \"Op records\")");
  add_tensor_digests_option(*cmd, o->tensor_digests);
  cmd->add_option("--keep-op", o->keep_op,
                  "Keep op INDEX of step STEP (STEP:INDEX, as the report's root cause names it) "
                  "whole in every run, whatever the keep budget: its magnitude, and K replays of "
                  "it in a fresh process that tell a nondeterministic kernel from a setting "
                  "(REPRO_AUDIT_KEEP_OP; docs/pytorch.md, \"The root-cause op's magnitude\")");
  cmd->add_option("--interrupt-at", o->interrupt_at,
                  "Stop every run but run 0 at the script's first save at or after step STEP "
                  "(rec.saved(path), or the recorder's call of checkpoint=(save, load) after "
                  "step STEP; repeatable), exit status 75; exec starts the command again to "
                  "resume from that file, and the report checks each resume against run 0 "
                  "(docs/resume.md, \"PyTorch\")")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)  // one step each: a "--" after it is the command's, not its end
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_option("--resume-arg", o->resume_arg,
                  "With --interrupt-at: words appended to the command when exec starts it again "
                  "after an interrupt, {checkpoint} replaced by the file the script saved (in "
                  "REPRO_AUDIT_CHECKPOINT_DIR), as in --resume-arg='--resume {checkpoint}'; "
                  "without it the script reads REPRO_AUDIT_RESUME_FROM");
  cmd->add_option("--timeout", o->exec.timeout_seconds,
                  "Stop a run still going after SECONDS (SIGTERM to its process group, SIGKILL "
                  "5 s later): the run fails, exit 3")
      ->check(finite_positive_number());
  cmd->add_flag("--allow-empty", o->allow_empty,
                "Exit 0, not 5, when nothing was compared (fewer than two same-seed runs)");
  add_exec_callback(cmd, run, o);
}

}  // namespace ra::app
