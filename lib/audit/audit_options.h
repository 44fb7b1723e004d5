#pragma once
// What an audit is asked to do (AuditOptions, AuditProgress) and what it gives back (AuditResult):
// the types the audit's phases share, apart from the functions of audit/audit.h that run them,
// so that a phase's header need not include audit.h, which includes the phases.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/algorithm_pins.h"
#include "compare/compare.h"
#include "record/kept_outputs.h"
#include "record/run_options.h"
#include "rundir/audit_folder_setup.h"
#include "rundir/shard.h"
#include "spec/spec.h"
#include "trace/trace.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace ra::audit {

// A comparison of traces with their snapshots (audit/audit_compare.h): compare_traces' options and
// what only the audit does beyond it, replaying runs (compare never trains, nor knows record).
struct AuditComparisonOptions : compare::ComparisonOptions {
  // Whether the magnitude of each op root cause is measured by a replay (audit/op_replay.h):
  // training the reference run to the op. Off (--no-magnitude): the root causes say the magnitude
  // was not measured.
  bool measure_magnitudes = true;
  // Outputs the runs kept as they ran (an in-process audit): used before any replay.
  const record::KeptOutputs* kept_outputs = nullptr;
};

// both: a same-seed and a different-seed group; all: and a perturbed group (the same seed, one
// bit of one initial weight flipped per run, deterministic kernels: docs/statistics.md).
enum class SeedPolicy { same, different, both, all };
// "same", "different", "both", "all": as the manifest records it and --seeds takes it.
inline const char* to_string(SeedPolicy p) {
  switch (p) {
    case SeedPolicy::same:
      return "same";
    case SeedPolicy::different:
      return "different";
    case SeedPolicy::both:
      return "both";
    case SeedPolicy::all:
      return "all";
  }
  return "?";
}
// The policy --seeds names (its values are checked by the CLI); same for anything else.
inline SeedPolicy seed_policy_from_string(const std::string& text) {
  for (SeedPolicy p : {SeedPolicy::different, SeedPolicy::both, SeedPolicy::all}) {
    if (text == to_string(p)) return p;
  }
  return SeedPolicy::same;
}

// Which random streams a "different" run varies; the others keep the spec's seed.
struct VariedStreams {
  bool init = true, data = true, dropout = true;
  bool augment = false;  // its own seed; else the data seed's (train::RunSeeds::augment)
};

struct AuditOptions {
  int runs = 3;
  SeedPolicy seeds = SeedPolicy::same;
  VariedStreams vary;
  std::optional<spec::KernelMode> mode;
  std::optional<int> threads;
  int jobs = 1;
  std::filesystem::path out_dir;
  rundir::FolderUse folder_use = rundir::FolderUse::fresh;  // rundir/audit_folder_setup.h
  // The report files' paths (--json, --junit): recorded in the manifest when they lie in out_dir,
  // so that --overwrite knows them as the tool's own files.
  std::vector<std::filesystem::path> report_files;
  record::SnapshotOptions snapshots;
  std::optional<record::FaultSpec> fault;
  // --trace-ops: the steps whose ops every run records (trace format version 2).
  std::optional<trace::OpWindow> trace_ops;
  // --tensor-digests: the steps recorded per tensor, when not every step (trace format version 4).
  std::optional<trace::TensorDigestPlan> tensor_digests;
  // Whether the report measures each op root cause's magnitude by a replay (audit/op_replay.h).
  bool measure_magnitudes = true;
  // --shard K/N: train only shard K's runs of the planned ones (rundir/shard.h) into a folder the
  // other shards share; no report (compare the folder once every shard has finished).
  std::optional<rundir::Shard> shard;
  // --pin-algorithms: the convolution algorithms every run runs (audit/pinned_algorithms.h, of a
  // file: rundir/algorithm_file.h); null: as the mode chooses them.
  std::shared_ptr<const backend::AlgorithmPins> algorithm_pins;
  // --save-algorithms: where the algorithms run 0 used are written once it has finished
  // (rundir/algorithm_file.h); empty: not written.
  std::filesystem::path save_algorithms;
  // --interrupt-at: every run but run 0 stops after each of these steps (ascending), writes a
  // checkpoint into its run-NNN/ folder and goes on in a new trainer restored from that file
  // alone; run 0 records its state as it passes them (docs/resume.md). Empty: no interrupts.
  std::vector<std::int64_t> interrupt_at;
  // --cuda-graphs on: each run's full steps as CUDA graphs where the backend can (its calibration
  // too, so the recording figure compares like with like); the traces say how each step ran.
  bool step_graphs = false;
  // --test-skip-restore (test-only): the pieces every restore leaves out.
  train::RestoreSkips restore_skips;
  std::optional<bool> expect_identical;  // default: when every run was fully deterministic
  double loss_tolerance = 1e-4;
  // --allow-empty: an audit that compared nothing is no failure (an input of the comparison).
  bool allow_empty = false;
  // The next step's command for a --trace-ops window (the app's, which knows its command line);
  // null: the report words the re-run (compare/compare.h ComparisonOptions::rerun_command).
  std::function<std::string(const std::string& window, bool tensor_digests)> rerun_command;
  std::string tool_version = "unknown";
};

// Progress of an audit, called from the thread that runs the run (serialise if jobs > 1).
struct AuditProgress {
  std::function<void(int run, int of)> run_started;
  std::function<void(int run, const train::StepEvent&, std::int64_t total_steps)> step;
  std::function<void(int run, const std::filesystem::path& trace)> run_finished;
  // What the audit did with its folder (files removed or left in place, runs resumed): for the
  // user to read, once per event.
  std::function<void(const std::string& message)> notice;
  // What the audit is doing, for the log (a shard started or joined the folder's audit).
  std::function<void(const std::string& message)> info;
  // A run's checkpoint after `step` steps was written ("checkpoint") or restored ("restore").
  std::function<void(int run, std::int64_t step, const std::string& event,
                     const std::string& message)>
      resume_event;
};

// What one shard did, and how far the whole audit is.
struct ShardOutcome {
  rundir::Shard shard;
  bool created_manifest = false;   // this shard started the audit (else it joined it)
  std::vector<int> runs;           // its planned runs
  std::vector<int> already_whole;  // of those, whole in the folder before it began (not retrained)
  int planned_runs = 0;            // of the whole audit
  std::vector<int> missing_runs;   // of the whole audit, when this shard ended
};

struct AuditResult {
  std::string audit_id;
  std::vector<std::filesystem::path> trace_files;  // every planned run's, in run order
  std::vector<int> trained_runs;                   // the runs this call trained (all but resumed)
  compare::ComparisonResult comparison;            // not made by a shard
  std::optional<ShardOutcome> shard;               // with options.shard
};

}  // namespace ra::audit
