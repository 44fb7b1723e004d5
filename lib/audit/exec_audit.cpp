#include "audit/exec_audit.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "audit/audit_compare.h"
#include "audit/audit_jobs.h"
#include "audit/audit_plan.h"
#include "core/directory.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/process.h"
#include "core/stop_signals.h"
#include "core/words.h"
#include "rundir/audit_folder.h"
#include "rundir/audit_folder_setup.h"
#include "rundir/folder_traces.h"
#include "rundir/interrupt_state.h"
#include "rundir/manifest.h"
#include "rundir/rank_traces.h"
#include "rundir/shard_folder_setup.h"
#include "trace/op_window.h"
#include "trace/tensor_digests.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::audit {
namespace {

namespace fs = std::filesystem;

std::vector<rundir::PlannedRun> plan_exec_runs(const ExecOptions& o) {
  std::vector<rundir::PlannedRun> plan;
  const auto add = [&](const char* group, bool derived) {
    for (int i = 0; i < o.runs; ++i) {
      const int index = static_cast<int>(plan.size());
      const std::uint64_t seed = derived ? derived_seed(o.seed, index) : o.seed;
      plan.push_back({index, group, rundir::PlannedSeeds::all(seed)});
    }
  };
  if (o.seeds != SeedPolicy::different) add("same", false);
  if (o.seeds != SeedPolicy::same) add("different", true);
  if (o.seeds == SeedPolicy::all) add("perturbed", false);
  return plan;
}

nlohmann::json exec_spec(const ExecOptions& o) {
  nlohmann::json spec{{"name", o.name}, {"source", "pytorch"}, {"command", o.command}};
  // How the command resumes is part of what is audited: --resume with another is refused.
  if (!o.resume_arg.empty()) spec["resume_arg"] = o.resume_arg;
  return spec;
}

rundir::AuditManifest requested_exec_manifest(const ExecOptions& o,
                                              const std::vector<rundir::PlannedRun>& plan) {
  rundir::AuditManifest m;
  m.tool_version = o.tool_version;
  m.spec = exec_spec(o);
  m.spec_digest = trace::spec_digest_of(m.spec).hex();
  m.device = "exec";
  m.backend = "exec";
  m.threads = 1;  // the command chooses its own; the manifest's field is run's
  m.determinism = {{"mode", "exec"}, {"ops", nlohmann::json::object()}};
  m.seed_policy = to_string(o.seeds);
  m.snapshots = {{"epochs", false}, {"every_steps", 0}, {"batches", false}};
  m.fault = nullptr;
  if (o.trace_ops) m.trace_ops = to_string(*o.trace_ops);
  if (o.tensor_digests) m.tensor_digests = to_string(*o.tensor_digests);
  m.interrupt_at = o.interrupt_at;
  // Exec's question: why runs differ.
  rundir::set_expectation(m, o.expect_identical, rundir::kExpectIdentical);
  m.runs = plan;
  return m;
}

// What is missing from a whole trace of run `run` of an audit with --interrupt-at, or "": run 0
// records its state as it passes each step's save point, every other run a resume after each
// restore.
std::string missing_resume(const trace::Trace& t, const rundir::AuditManifest& m, int run) {
  for (const std::int64_t step : m.interrupt_at) {
    const bool found = std::any_of(t.resume_points.begin(), t.resume_points.end(),
                                   [&](const trace::ResumePoint& p) {
                                     return p.interrupt_at == step && p.resumed == (run != 0);
                                   });
    if (found) continue;
    return "wrote a trace of " + std::to_string(t.final ? t.final->steps : 0) +
           " steps without a resume record for --interrupt-at " + std::to_string(step) +
           ": did the script tell the recorder of a save at or after step " + std::to_string(step) +
           " (rec.saved(path) after its own save), and train a step after it (docs/resume.md, "
           "\"PyTorch\")?";
  }
  return "";
}

// What is wrong with a run whose command ended with `result`, or "" when it is a whole run of the
// audit: the command failed, wrote no trace, a trace this tool refuses, a failed run's trace, one
// without the op records asked for, or without the resume records --interrupt-at asked for.
std::string run_problem(const ProcessResult& result, const fs::path& trace,
                        const rundir::AuditManifest& m, int run) {
  if (result.timed_out || result.forwarded != 0) return result.describe();  // "timed out ..."
  if (!result.ok()) return "ended with " + result.describe();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(trace, ec))) {
    return "wrote no trace " + trace.filename().string() +
           ": does it record with repro_audit.record(model, optimizer) (docs/pytorch.md)?";
  }
  try {
    const trace::Trace t = trace::read_trace_summary(trace);  // every check; its steps are not kept
    if (t.failed()) return "ran, but the run " + trace::describe_failure(*t.final);
    if (std::string ranks = rundir::rank_traces_problem(t, trace); !ranks.empty()) {
      return "ran, but the run " + ranks;
    }
    if (!m.trace_ops.empty() && !t.header.trace_ops) {
      return "wrote a trace without op records, though --trace-ops " + m.trace_ops +
             " asked for them: is its repro_audit older than op records?";
    }
    if (std::string missing = missing_resume(t, m, run); !missing.empty()) return missing;
  } catch (const InputError& e) {
    return std::string("wrote a trace this tool refuses (") + e.what() +
           "): is its repro_audit another version than this tool's?";
  }
  return "";
}

// A trace of a run that failed is never taken for a whole run: moved into the run's folder as
// failed.trace.jsonl (the folder's own file, removed when the run runs again), so the audit
// folder holds only whole traces and --resume runs it again.
void quarantine_trace(const fs::path& out_dir, int run) {
  const fs::path trace = out_dir / rundir::trace_name(run);
  // A data-parallel run's other ranks: no part of a whole run.
  rundir::quarantine_rank_traces(trace);
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(trace, ec))) return;
  const fs::path folder = out_dir / rundir::run_name(run);
  fs::create_directories(folder, ec);
  fs::rename(trace, folder / rundir::kFailedTraceName, ec);
  if (ec) fs::remove(trace, ec);  // never left under a whole trace's name
}

// The run's folder (run-NNN/), where its command's output is kept.
fs::path run_folder(const ExecOptions& o, int run) {
  const fs::path folder = o.out_dir / rundir::run_name(run);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw InputError("cannot create the run folder " + folder.string() + ": " + ec.message());
  return folder;
}

// What to do about a failure its last lines explain, or "". A missing recorder is the first
// failure of a new user's first audit: it gets the install line.
std::string failure_hint(const std::string& tail) {
  if (tail.find("No module named 'repro_audit'") == std::string::npos) return "";
  return "; the command's python cannot import repro_audit: export PYTHONPATH=$(repro-audit "
         "python-path), or in its venv pip install --no-build-isolation ./lib/python "
         "(docs/pytorch.md, \"Install\")";
}

// The steps as REPRO_AUDIT_INTERRUPT_AT gives them: "20,50", "" for none.
std::string steps_text(const std::vector<std::int64_t>& steps) {
  std::string out;
  for (const std::int64_t s : steps) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

using Environment = std::vector<std::pair<std::string, std::string>>;

// The run's checkpoint folder, run-NNN/checkpoints/ (REPRO_AUDIT_CHECKPOINT_DIR), absolute.
fs::path checkpoint_folder(const ExecOptions& o, int run) {
  return fs::absolute(o.out_dir / rundir::run_name(run) / rundir::kCheckpointFolderName);
}

// After the interrupt that served --interrupt-at `step`: the recorder's file read, and the
// command and environment that resume the run (--resume-arg's words with the script's file,
// REPRO_AUDIT_RESUME_FROM and REPRO_AUDIT_RESUME_STATE); "" or what was wrong.
std::string resume_after_interrupt(const ExecOptions& o, int run, std::int64_t step,
                                   std::vector<std::string>& command, Environment& environment) {
  const fs::path folder = checkpoint_folder(o, run);
  const fs::path state = folder / ("checkpoint-step-" + std::to_string(step) + ".recorder.json");
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(state, ec))) {
    return "ended with exit status " + std::to_string(kInterruptedExit) +
           " (interrupted) but left no " + state.filename().string();
  }
  fs::path checkpoint;
  try {
    const rundir::InterruptState s = rundir::read_interrupt_state(state);
    if (s.interrupt_at != step) {
      throw InputError(state.string() + " serves --interrupt-at " + std::to_string(s.interrupt_at) +
                       ", not " + std::to_string(step));
    }
    checkpoint = rundir::checkpoint_in_folder(folder, s.checkpoint_file);
  } catch (const InputError& e) {
    return std::string("was interrupted, but cannot be resumed: ") + e.what();
  }
  command = o.command;
  const std::vector<std::string> words = rundir::resume_words(o.resume_arg, checkpoint.string());
  command.insert(command.end(), words.begin(), words.end());
  for (auto& [name, value] : environment) {
    if (name == "REPRO_AUDIT_RESUME_FROM") value = checkpoint.string();
    if (name == "REPRO_AUDIT_RESUME_STATE") value = state.string();
  }
  return "";
}

// The command, started again after each interrupt (lib/python/repro_audit/checkpoint.py): an
// exit with kInterruptedExit after the recorder wrote checkpoint-step-S.recorder.json is a run
// stopped at the save point of its next --interrupt-at step S, which the next process resumes
// from. Its result is the last process's; `problem` says what was wrong with an interrupt.
ProcessResult run_through_interrupts(const ExecOptions& o, const rundir::PlannedRun& p,
                                     Environment environment, const fs::path& log,
                                     std::string& problem) {
  ProcessLimits limits;
  limits.timeout_seconds = o.timeout_seconds;
  std::vector<std::string> command = o.command;
  for (std::size_t interrupts = 0;; ++interrupts) {
    const ProcessResult result = run_process(command, environment, log, limits);
    if (result.signal != 0 || result.timed_out || result.forwarded != 0 ||
        result.exit_code != kInterruptedExit) {
      return result;
    }
    if (p.index == 0 || interrupts >= o.interrupt_at.size()) {
      problem = "ended with exit status " + std::to_string(kInterruptedExit) +
                ", the recorder's after an interrupt, though none was due";
      return result;
    }
    problem = resume_after_interrupt(o, p.index, o.interrupt_at[interrupts], command, environment);
    if (!problem.empty()) return result;
  }
}

// One run of the command; RuntimeFailure when it fails or leaves no whole trace.
void run_command(const ExecOptions& o, const rundir::AuditManifest& m,
                 const rundir::PlannedRun& p) {
  if (const int signal = StopSignals::received(); signal != 0) {
    throw RuntimeFailure("exec received signal " + std::to_string(signal) + " (" +
                         strsignal(signal) + "): run " + std::to_string(p.index) +
                         " was not started");
  }
  const fs::path trace = o.out_dir / rundir::trace_name(p.index);
  const fs::path folder = run_folder(o, p.index);
  const fs::path log = folder / rundir::kCommandLogName;
  // Made never through a link; everything in it is the run's (audit_folder.h).
  Directory::open(folder).subfolder(rundir::kCheckpointFolderName, true);
  Environment environment{{"REPRO_AUDIT_TRACE", fs::absolute(trace).string()},
                          {"REPRO_AUDIT_RUN", std::to_string(p.index)},
                          {"REPRO_AUDIT_SEED", std::to_string(p.seeds.init)},
                          {"REPRO_AUDIT_SEED_GROUP", p.group},
                          {"REPRO_AUDIT_ID", m.audit_id},
                          {"REPRO_AUDIT_SPEC", m.spec.dump()}};
  // Set either way: a window left in the caller's environment is not this audit's.
  environment.emplace_back("REPRO_AUDIT_TRACE_OPS", m.trace_ops);
  environment.emplace_back("REPRO_AUDIT_TENSOR_DIGESTS", m.tensor_digests);
  environment.emplace_back("REPRO_AUDIT_INTERRUPT_AT", steps_text(o.interrupt_at));
  environment.emplace_back("REPRO_AUDIT_SNAPSHOT_STEPS", steps_text(o.snapshot_steps));
  environment.emplace_back("REPRO_AUDIT_RESUME_FROM", "");   // set when started again
  environment.emplace_back("REPRO_AUDIT_RESUME_STATE", "");  // likewise
  environment.emplace_back("REPRO_AUDIT_CHECKPOINT_DIR", checkpoint_folder(o, p.index).string());
  // The perturbed group: the recorder flips one bit of one initial weight, picked by this draw
  // (lib/python/repro_audit/perturb.py); set either way, as the window is.
  environment.emplace_back("REPRO_AUDIT_PERTURB",
                           p.group == "perturbed" ? std::to_string(p.index) : std::string());
  // Every run of an audit with a perturbed group checks that its model can be perturbed, so that
  // a model without a float32 weight fails at run 0's start, not after the other groups trained.
  environment.emplace_back("REPRO_AUDIT_PERTURB_PLANNED", o.seeds == SeedPolicy::all ? "1" : "");
  if (o.keep_op) {
    environment.emplace_back("REPRO_AUDIT_KEEP_OP", std::to_string(o.keep_op->step) + ":" +
                                                        std::to_string(o.keep_op->index));
  }
  if (!o.device_digest_library.empty() &&
      std::getenv("REPRO_AUDIT_DEVICE_DIGEST_LIBRARY") == nullptr) {
    environment.emplace_back("REPRO_AUDIT_DEVICE_DIGEST_LIBRARY",
                             fs::absolute(o.device_digest_library).string());
  }
  std::string problem;
  const ProcessResult result = run_through_interrupts(o, p, environment, log, problem);
  if (problem.empty()) problem = run_problem(result, trace, m, p.index);
  if (!problem.empty()) {
    quarantine_trace(o.out_dir, p.index);
    const std::string tail = last_lines_joined(log, 8);
    throw RuntimeFailure("run " + std::to_string(p.index) + ": the command " + problem +
                         (tail.empty() ? "; it printed nothing" : "; its last lines: " + tail) +
                         " (its output: " + log.string() + ")" + failure_hint(tail));
  }
}

// The planned runs `to_train` (indices into `plan`), o.jobs at a time.
void run_commands(const ExecOptions& o, const rundir::AuditManifest& m,
                  const std::vector<rundir::PlannedRun>& plan, const std::vector<int>& to_train,
                  const AuditProgress& progress) {
  const int of = static_cast<int>(plan.size());
  run_jobs(to_train.size(), o.jobs, [&](std::size_t i) {
    const rundir::PlannedRun& p = plan[static_cast<std::size_t>(to_train[i])];
    if (progress.run_started) progress.run_started(p.index, of);
    run_command(o, m, p);
    if (progress.run_finished)
      progress.run_finished(p.index, o.out_dir / rundir::trace_name(p.index));
  });
}

// One shard of an exec audit: the folder is shared (never removed on failure; locked in common,
// the shard's own lock exclusively), as in run_audit_shard (audit/run_audit_shard.cpp).
AuditResult run_exec_shard(const ExecOptions& o, const std::vector<rundir::PlannedRun>& plan,
                           const AuditProgress& progress) {
  const rundir::Shard shard = *o.shard;
  rundir::check_shard_request(shard, o.folder_use == rundir::FolderUse::overwrite,
                              !o.report_files.empty(), plan.size(), o.out_dir);
  rundir::AuditManifest requested = requested_exec_manifest(o, plan);
  requested.shards = shard.count;
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec)
    throw InputError("cannot create output folder " + o.out_dir.string() + ": " + ec.message());
  const rundir::ShardLocks locks(o.out_dir, shard);
  const StopSignals stop_signals;  // SIGINT and SIGTERM are passed on to the runs
  rundir::ShardFolderSetup setup(o.out_dir, shard, requested, progress.notice, progress.info);
  setup.inspect();
  const rundir::ShardPlan folder = setup.apply();

  AuditResult result;
  result.audit_id = folder.manifest.audit_id;
  result.trained_runs = folder.to_train;
  for (const rundir::PlannedRun& p : plan)
    result.trace_files.push_back(o.out_dir / rundir::trace_name(p.index));
  const int of = static_cast<int>(plan.size());
  run_commands(o, folder.manifest, plan, folder.to_train, progress);
  ShardOutcome outcome;
  outcome.shard = shard;
  outcome.created_manifest = folder.created_manifest;
  outcome.runs = rundir::runs_of_shard(shard, of);
  outcome.already_whole = folder.already_whole;
  outcome.planned_runs = of;
  const rundir::ManifestRuns now =
      rundir::read_manifest_runs(o.out_dir, folder.manifest, rundir::DamagedTrace::retrain);
  for (const compare::MissingRun& m : now.check.missing_runs) outcome.missing_runs.push_back(m.run);
  result.shard = std::move(outcome);
  return result;
}

}  // namespace

KeptOp parse_kept_op(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 18 ||
        part.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("--keep-op: '" + printable(text) +
                       "': expected STEP:INDEX, two integers >= 0 (the root cause's step and its "
                       "op index, as the report names them)");
    }
    return static_cast<std::int64_t>(std::stoll(part));
  };
  if (colon == std::string::npos) number("");
  return KeptOp{number(text.substr(0, colon)), number(text.substr(colon + 1))};
}

std::string exec_name(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    const fs::path p(arg);
    if (p.extension() == ".py") return p.stem().string();
  }
  return command.empty() ? std::string("exec") : fs::path(command[0]).filename().string();
}

AuditResult run_exec_audit(const ExecOptions& o, const AuditProgress& progress) {
  if (o.command.empty()) throw InputError("exec: no command given (repro-audit exec -- CMD ...)");
  const std::vector<rundir::PlannedRun> plan = plan_exec_runs(o);
  if (o.shard) return run_exec_shard(o, plan, progress);
  const StopSignals stop_signals;  // SIGINT and SIGTERM are passed on to the runs
  const rundir::OutputFolder out_folder(o.out_dir);
  const rundir::FolderLock folder_lock(o.out_dir);
  // The folder rules run applies, with exec's choices.
  rundir::AuditFolderSetup setup(o.out_dir, o.folder_use, o.report_files,
                                 requested_exec_manifest(o, plan), progress.notice);
  setup.inspect();
  const rundir::FolderPlan folder = setup.apply();
  const rundir::NewManifestGuard manifest_guard(o.out_dir, folder.new_audit);

  AuditResult result = started_result(folder, plan, o.out_dir);
  run_commands(o, folder.manifest, plan, folder.to_train, progress);
  AuditComparisonOptions compare_options;
  // The audit's expectation, as compare's.
  compare_options.expect_identical = rundir::expectation_of(folder.manifest);
  compare_options.loss_tolerance = o.loss_tolerance;
  compare_options.allow_empty = o.allow_empty;
  compare_options.rerun_command = o.rerun_command;
  // From the outputs the runs kept (a PyTorch run is never replayed).
  compare_options.measure_magnitudes = true;
  result.comparison = compare_audit_folder(o.out_dir, folder.manifest, compare_options);
  return result;
}

std::vector<std::string> parse_versus(const std::string& text) {
  std::vector<std::string> words = split_words(text);
  if (words.empty()) throw InputError("--versus names no command: give program B's, as 'CMD ARGS'");
  return words;
}

compare::ComparisonResult run_versus_audit(const VersusOptions& v, const AuditProgress& progress) {
  if (v.a.shard || !v.a.interrupt_at.empty() || v.a.keep_op) {
    throw InputError("--versus does not combine with --shard, --interrupt-at or --keep-op");
  }
  if (v.command_b.empty()) throw InputError("--versus names no command");
  ExecOptions a = v.a;
  a.seeds = SeedPolicy::all;
  // The parameters' values at steps 0, 1, 2, 4, 8, ...: where B's first part from A's by more
  // than the floor (docs/equivalence.md, "The floor").
  a.snapshot_steps = {0};
  for (std::int64_t s = 1; s <= (std::int64_t{1} << 40); s *= 2) a.snapshot_steps.push_back(s);
  a.out_dir = v.a.out_dir / "a";
  a.allow_empty = true;
  a.report_files.clear();
  ExecOptions b = a;
  b.command = v.command_b;
  b.name = exec_name(v.command_b);
  b.seeds = SeedPolicy::same;
  b.runs = 1;
  b.out_dir = v.a.out_dir / "b";
  const rundir::OutputFolder parent(v.a.out_dir);  // removed again if nothing is written in it
  const AuditResult run_a = run_exec_audit(a, progress);
  const AuditResult run_b = run_exec_audit(b, progress);
  // A's run 0, B's, then the floor: A's other same-seed runs (0 .. runs-1) and its perturbed ones
  // (the last group of plan_exec_runs).
  std::vector<fs::path> files = {run_a.trace_files[0], run_b.trace_files[0]};
  for (int i = 1; i < a.runs; ++i) files.push_back(run_a.trace_files[static_cast<std::size_t>(i)]);
  for (int i = 2 * a.runs; i < 3 * a.runs; ++i) {
    files.push_back(run_a.trace_files[static_cast<std::size_t>(i)]);
  }
  AuditComparisonOptions compare_options;
  compare_options.expect_equivalent = true;
  compare_options.equivalence_margin = v.margin;
  compare_options.loss_tolerance = v.a.loss_tolerance;
  compare_options.measure_magnitudes = true;  // from kept outputs: a PyTorch run is never replayed
  return compare_trace_files(files, compare_options);
}

}  // namespace ra::audit
