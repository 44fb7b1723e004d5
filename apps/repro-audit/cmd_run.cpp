// `repro-audit run SPEC --runs N`: the audit. Trains N runs, writes one trace per run (and
// snapshots) under --out, prints the report; exit 1 when runs diverge where equality was expected.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>

#include "audit/audit.h"
#include "audit/engine_invariance.h"
#include "audit/pinned_algorithms.h"
#include "cli_help.h"
#include "commands.h"
#include "core/error.h"
#include "cuda_graphs_option.h"
#include "default_folder.h"
#include "invariance_cli.h"
#include "option_checks.h"
#include "record/fault_check.h"
#include "report_output.h"
#include "rerun_command.h"
#include "run_label.h"
#include "rundir/audit_folder.h"
#include "rundir/audit_folder_setup.h"
#include "rundir/report_paths.h"
#include "spec/limits.h"
#include "spec/parse.h"
#include "spec_overrides.h"
#include "trace/invariance.h"
#include "trace/op_window.h"
#include "trace/tensor_digests.h"
#include "trace_options.h"
#include "train/backend_choice.h"

namespace ra::app {
namespace {

struct RunCommandOptions {
  std::string spec_path;
  audit::AuditOptions audit;
  std::string seeds = "same";
  std::string vary;
  std::string mode;
  std::string out;
  std::string json_path;
  std::string junit_path;
  std::string html_path;
  std::string expect;
  std::string fault;
  std::string trace_ops;
  std::vector<std::string> tensor_digests;
  std::string device;         // "" = the spec's
  std::optional<int> epochs;  // the spec's train.epochs unless given
  std::string shard;          // "" = every run in this process
  bool overwrite = false;
  bool resume = false;
  bool no_magnitude = false;
  bool allow_empty = false;
  std::string save_algorithms;
  std::string pin_algorithms;
  std::vector<std::int64_t> interrupt_at;
  std::string skip_restore;
  std::string kill_at;  // test-only: "checkpoint" or "restore"
  InvarianceCli invariance;
};

// The options of an audit of runs, which a sweep does not take.
const std::vector<std::string> kAuditOnlyRunOptions = {"--runs",
                                                       "--seeds",
                                                       "--vary",
                                                       "--epochs",
                                                       "--jobs",
                                                       "--shard",
                                                       "--trace-ops",
                                                       "--tensor-digests",
                                                       "--resume",
                                                       "--overwrite",
                                                       "--allow-empty",
                                                       "--no-magnitude",
                                                       "--save-algorithms",
                                                       "--pin-algorithms",
                                                       "--interrupt-at",
                                                       "--snapshot-epochs",
                                                       "--snapshot-every",
                                                       "--inject-fault"};

// `run SPEC --invariance`: the engine's sweep of the spec's model, its file, and its report.
int run_invariance(const RunCommandOptions& o) {
  spec::ExperimentSpec s = spec::load_spec(o.spec_path);
  if (!o.device.empty()) s.device = *spec::device_from_string(o.device);
  audit::EngineSweepOptions e;
  e.threads = o.audit.threads;
  if (!o.mode.empty()) e.mode = spec::kernel_mode_from_string(o.mode);
  const trace::InvariancePlan plan = invariance_plan(o.invariance);
  const std::filesystem::path out =
      o.out.empty() ? std::filesystem::path("repro-audit-out") / (s.name + "-invariance")
                    : std::filesystem::path(o.out);
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path}, {{out}, {o.spec_path}});
  if (const std::string notice = train::fallback_notice(s.device); !notice.empty()) {
    spdlog::warn("{}", notice);
  }
  spdlog::info("batch-invariance sweep of {}: {} batch size(s) up to {}, in {}", s.name,
               plan.sizes.size(), plan.sizes.back(), out.string());
  const trace::InvarianceSweep sweep = audit::engine_invariance_sweep(s, plan, e);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw InputError("cannot create output folder " + out.string() + ": " + ec.message());
  trace::write_invariance_sweep(out / "invariance.jsonl", sweep);
  return emit_invariance_report(sweep, parse_expect(o.expect).value_or(true),
                                rerun_without({"--mode", "--json", "--junit", "--html"}),
                                {o.json_path, o.junit_path, o.html_path});
}

audit::VariedStreams parse_vary(const std::string& text) {
  audit::VariedStreams v{false, false, false};
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    if (item == "init")
      v.init = true;
    else if (item == "data")
      v.data = true;
    else if (item == "dropout")
      v.dropout = true;
    else if (item == "augment")
      v.augment = true;
    else
      throw InputError("--vary: unknown stream '" + item +
                       "' (expected init, data, dropout, augment)");
    pos = end + 1;
  }
  return v;
}

// Progress on stderr: a bar rewritten in place on a terminal, plain lines every few seconds
// otherwise (logs stay readable in CI).
class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) == 1) {}
  void started(int run, int of) {
    run_ = run;
    of_ = of;
    run_start_ = std::chrono::steady_clock::now();
    if (!tty_) spdlog::info("{} started", run_label(run, of));
  }
  void step(int run, const train::StepEvent& e, std::int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - run_start_).count();
    const double eta = e.step + 1 > 0 ? elapsed / (e.step + 1) * (total - e.step - 1) : 0.0;
    if (tty_) {
      if (now - last_ < std::chrono::milliseconds(100) && e.step + 1 != total) return;
      const int width = 24;
      const int filled = total > 0 ? static_cast<int>(width * (e.step + 1) / total) : width;
      std::fprintf(stderr, "\r %s [%s%s] step %lld/%lld loss %.5f ETA %.0fs   ",
                   run_label(run, of_).c_str(), std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), static_cast<long long>(e.step + 1),
                   static_cast<long long>(total), e.loss, eta);
    } else {
      if (now - last_ < std::chrono::seconds(5)) return;
      spdlog::info("{} step {}/{} loss {:.5f} ETA {:.0f}s", run_label(run, of_), e.step + 1, total,
                   e.loss, eta);
    }
    last_ = now;
  }
  void finished(int run, const std::filesystem::path& trace) {
    if (tty_) std::fprintf(stderr, "\r%*s\r", 90, "");
    spdlog::info("{} done: {}", run_label(run, of_), trace.string());
  }

 private:
  bool tty_;
  int run_ = 0, of_ = 0;
  std::chrono::steady_clock::time_point run_start_{}, last_{};
};

// The spec a run of the audit trains: the file's, with --device and --epochs.
spec::ExperimentSpec spec_to_run(const RunCommandOptions& o) {
  spec::ExperimentSpec s = spec::load_spec(o.spec_path);
  if (!o.device.empty()) s.device = *spec::device_from_string(o.device);
  override_epochs(s, o.epochs);
  return s;
}

int run_run(RunCommandOptions& o) {
  if (o.invariance.enabled) return run_invariance(o);
  const spec::ExperimentSpec s = spec_to_run(o);
  audit::AuditOptions& a = o.audit;
  a.seeds = audit::seed_policy_from_string(o.seeds);
  if (!o.vary.empty()) {
    a.vary = parse_vary(o.vary);
    // Varying a stream only means something for runs whose seeds differ.
    if (a.seeds == audit::SeedPolicy::same) a.seeds = audit::SeedPolicy::different;
  }
  if (!o.mode.empty()) a.mode = spec::kernel_mode_from_string(o.mode);
  a.expect_identical = parse_expect(o.expect);
  if (!o.fault.empty()) a.fault = record::parse_fault(o.fault);
  if (!o.trace_ops.empty()) a.trace_ops = trace::parse_op_window(o.trace_ops);
  if (const auto plan = trace::parse_tensor_digest_plan(o.tensor_digests); !plan.all()) {
    a.tensor_digests = plan;
  }
  a.measure_magnitudes = !o.no_magnitude;
  a.out_dir = o.out.empty() ? std::filesystem::path("repro-audit-out") / s.name
                            : std::filesystem::path(o.out);
  a.tool_version = REPRO_AUDIT_VERSION;
  a.folder_use = o.resume      ? rundir::FolderUse::resume
                 : o.overwrite ? rundir::FolderUse::overwrite
                               : rundir::FolderUse::fresh;
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path},
                             {{a.out_dir}, {o.spec_path}});
  if (!o.json_path.empty() && o.json_path != "-") a.report_files.push_back(o.json_path);
  if (!o.junit_path.empty()) a.report_files.push_back(o.junit_path);
  if (!o.html_path.empty()) a.report_files.push_back(o.html_path);

  Progress progress;
  audit::AuditProgress hooks;
  hooks.run_started = [&](int run, int of) { progress.started(run, of); };
  hooks.step = [&](int run, const train::StepEvent& e, std::int64_t total) {
    progress.step(run, e, total);
  };
  hooks.run_finished = [&](int run, const std::filesystem::path& t) { progress.finished(run, t); };
  hooks.notice = [](const std::string& message) { spdlog::warn("{}", message); };
  hooks.info = [](const std::string& message) { spdlog::info("{}", message); };
  hooks.resume_event = [kill_at = o.kill_at](int run, std::int64_t step, const std::string& event,
                                             const std::string& message) {
    spdlog::info("run {} at step {}: {}", run, step, message);
    // --test-kill-at: a kill -9 at that moment, for the test that --resume finishes the audit.
    if (event == kill_at) ::raise(SIGKILL);
  };
  std::sort(o.interrupt_at.begin(), o.interrupt_at.end());
  o.interrupt_at.erase(std::unique(o.interrupt_at.begin(), o.interrupt_at.end()),
                       o.interrupt_at.end());
  a.interrupt_at = o.interrupt_at;
  if (!o.skip_restore.empty()) a.restore_skips = train::parse_restore_skips(o.skip_restore);
  if (const std::string notice = train::fallback_notice(s.device); !notice.empty()) {
    spdlog::warn("{}", notice);
  }
  if (!o.shard.empty()) a.shard = rundir::parse_shard(o.shard, rundir::process_environment());
  if (!o.pin_algorithms.empty()) {
    a.algorithm_pins = std::make_shared<const backend::AlgorithmPins>(
        audit::pins_for_run(o.pin_algorithms, s, train::gpu_fingerprint()));
  }
  if (!o.save_algorithms.empty()) {
    if (a.shard) {
      throw InputError(
          "--save-algorithms: a shard may not hold run 0; save them from a "
          "single-process audit");
    }
    audit::check_algorithms_can_be_saved(s, train::gpu_fingerprint());
    a.save_algorithms = o.save_algorithms;
  }
  move_earlier_default_audit(a.out_dir, !o.out.empty(), a.folder_use, a.shard.has_value());
  spdlog::info("auditing {}: {} run(s){}, traces in {}", s.name, a.runs,
               a.shard ? " (shard " + rundir::shard_text(*a.shard) + ")" : "", a.out_dir.string());
  // Inputs of the comparison, not patches of its result (issue 60).
  a.allow_empty = o.allow_empty;
  a.rerun_command = [out = a.out_dir](const std::string& window, bool tensor_digests) {
    return rerun_with_window(window, out, tensor_digests);
  };
  audit::AuditResult result = audit::run_audit(s, a, hooks);
  if (result.shard) return print_shard_outcome(*result.shard, a.out_dir);
  return emit_report(result.comparison, {o.json_path, o.junit_path, o.html_path});
}

}  // namespace

// Autotune once, pin for every run (docs/determinism.md).
void add_algorithm_options(CLI::App& cmd, RunCommandOptions& o) {
  cmd.add_option("--save-algorithms", o.save_algorithms,
                 "Write the convolution algorithms run 0 ran (per geometry and direction, with "
                 "the GPU and cuDNN/cuBLAS versions) to FILE, for --pin-algorithms");
  cmd.add_option("--pin-algorithms", o.pin_algorithms,
                 "Run exactly the convolution algorithms of FILE (a --save-algorithms file or a "
                 "trace: its ledger) in every run: autotune once, pin for every run. A file of "
                 "another GPU or library version is refused");
}

// Interrupt and resume runs; check each resume against run 0 (docs/resume.md).
// What each run's trace records besides its steps' digests: op records and the level of detail.
void add_trace_options(CLI::App& cmd, RunCommandOptions& o) {
  cmd.add_option(
      "--trace-ops", o.trace_ops,
      "Also record every op of the steps in WINDOW (N for step N alone, A:B, A: or all): "
      "inputs' and outputs' digests, so the report names the op where runs first part");
  add_tensor_digests_option(cmd, o.tensor_digests);
}

void add_resume_options(CLI::App& cmd, RunCommandOptions& o) {
  cmd.add_option("--interrupt-at", o.interrupt_at,
                 "Stop every run but run 0 after step STEP (repeatable), write a checkpoint into "
                 "its run folder and go on in a new trainer restored from it; the report checks "
                 "each resume against run 0 (docs/resume.md)")
      ->check(CLI::Range(std::int64_t{1}, spec::kMaxSteps));
  cmd.add_option("--test-skip-restore", o.skip_restore,
                 "TESTING ONLY: leave pieces out of every restore "
                 "(weights,optimizer,schedule,rng,position)")
      ->group("Testing");
  cmd.add_option("--test-kill-at", o.kill_at,
                 "TESTING ONLY: kill -9 this process when a checkpoint is written or restored")
      ->check(CLI::IsMember({"checkpoint", "restore"}))
      ->group("Testing");
}

void add_snapshot_options(CLI::App& cmd, RunCommandOptions& o) {
  cmd.add_flag("--snapshot-epochs", o.audit.snapshots.epochs, "Snapshot weights after every epoch");
  cmd.add_option("--snapshot-every", o.audit.snapshots.every_steps,
                 "Snapshot weights after every N-th step")
      ->check(whole_number_up_to(spec::kMaxSteps));
  cmd.add_option_function<std::string>(
         "--snapshot-writer",
         [&o](const std::string& how) {
           if (how == "auto") {
             o.audit.snapshots.write_behind.reset();
           } else {
             o.audit.snapshots.write_behind = how == "thread";
           }
         },
         "Who writes the weight snapshots: thread (a writer thread, while the run trains on), "
         "inline (the run, as it takes each) or auto (default: thread where the weights live on "
         "a GPU, inline on the CPU)")
      ->check(CLI::IsMember({"auto", "thread", "inline"}));
  add_cuda_graphs_option(cmd, o.audit.step_graphs);
  cmd.add_flag("--save-batches", o.audit.snapshots.batches,
               "Write the sample indices of every batch (batches.json) for replay elsewhere");
}

// What replaces the spec's own settings in every run.
void add_spec_overrides(CLI::App& cmd, RunCommandOptions& o) {
  cmd.add_option("--mode", o.mode, "Kernel mode for every reducing op (overrides the spec)")
      ->check(CLI::IsMember({"deterministic", "nondeterministic", "autotune", "batch_invariant"}));
  cmd.add_option("--device", o.device,
                 "auto: the GPU when usable, else the CPU; cuda: the GPU or exit 3; cpu "
                 "(overrides the spec)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd.add_option("--threads", o.audit.threads, "Threads per run (overrides the spec)")
      ->check(CLI::Range(0, 1024));
  add_epochs_option(cmd, o.epochs);
}

void register_run(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Audit: train N runs, compare them bit for bit, report");
  cmd->footer(exit_codes_text());
  cmd->add_option("spec", o->spec_path, "Experiment spec (JSON)")->required();
  cmd->add_option("--runs", o->audit.runs, "Number of runs (per seed group)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option(
         "--seeds", o->seeds,
         "same: every run the spec's seed; different: run i a derived seed; both: N of each; "
         "all: also N with one bit of one initial weight flipped, deterministic kernels "
         "(docs/statistics.md)")
      ->check(CLI::IsMember({"same", "different", "both", "all"}));
  cmd->add_option("--vary", o->vary,
                  "Streams the different-seed runs vary (init,data,dropout,augment); the others "
                  "keep the spec's seed. Implies --seeds different unless both");
  add_spec_overrides(*cmd, *o);
  cmd->add_option("--jobs", o->audit.jobs,
                  "Runs trained at once (1: runs do not disturb each "
                  "other's timing)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--out", o->out,
                  "Folder for traces and snapshots (default repro-audit-out/<name>)");
  cmd->add_option("--json", o->json_path, "Also write the JSON report to FILE ('-': stdout only)");
  cmd->add_option("--html", o->html_path,
                  "Also write the HTML report to FILE: one self-contained page with plots");
  cmd->add_option("--junit", o->junit_path,
                  "Also write a JUnit XML report to FILE, for CI test-report readers (docs/ci.md)");
  auto* overwrite = cmd->add_flag(
      "--overwrite", o->overwrite,
      "Replace the audit already in --out: removes only repro-audit's own files there (manifest, "
      "traces, snapshots, temporaries, its reports) and leaves anything else in place");
  cmd->add_flag("--resume", o->resume,
                "Finish the interrupted audit in --out: train only the runs without a whole "
                "trace, then report on all (the spec and options must be the audit's)")
      ->excludes(overwrite);
  cmd->add_option("--shard", o->shard,
                  "Train only shard K of N's runs (run p belongs to shard p mod N) into --out, "
                  "shared with the other shards; auto: K and N from a Slurm job array or auto/N "
                  "from a Kubernetes Indexed Job (docs/scale-out.md). No report: compare --out "
                  "once every shard has finished");
  cmd->add_option("--expect", o->expect,
                  "identical: exit 1 unless bitwise identical; any: never exit 1 (default: "
                  "identical in deterministic mode with same seeds)")
      ->check(CLI::IsMember({"identical", "any"}));
  cmd->add_option("--tolerance", o->audit.loss_tolerance,
                  "Relative tolerance of the within-tolerance verdict on final losses")
      ->capture_default_str()
      ->check(finite_positive_number());
  add_snapshot_options(*cmd, *o);
  add_trace_options(*cmd, *o);
  cmd->add_flag("--allow-empty", o->allow_empty,
                "Exit 0, not 5, when nothing was compared (fewer than two same-seed runs)");
  cmd->add_flag("--no-magnitude", o->no_magnitude,
                "Do not measure how much a root-cause op's outputs differ (a replay of the "
                "reference run to the op, executing it until each run's outputs reappear)");
  add_algorithm_options(*cmd, *o);
  add_resume_options(*cmd, *o);
  cmd->add_option("--inject-fault", o->fault,
                  "TESTING ONLY: run=J,step=K,tensor=NAME|batch|op=LAYER/OP[,element=E][,bit=B]")
      ->group("Testing");
  add_invariance_options(*cmd, o->invariance);
  cmd->callback([&run, o, cmd] {
    run = [o, cmd] {
      // Here, not in the parse: main turns what a run throws into its exit code.
      if (o->invariance.enabled) refuse_with_invariance(*cmd, kAuditOnlyRunOptions);
      return run_run(*o);
    };
  });
}

}  // namespace ra::app
