#pragma once
// An audit: N training runs of one spec under controlled seeds, each recorded into a trace file
// (written atomically as soon as its run ends, so an interrupted audit keeps every finished run),
// then compared. The folder holds one audit: its manifest (audit.json) names the audit and its
// planned runs, every trace and snapshot carries the audit id, and a lock keeps a second audit
// out while one runs (audit/manifest.h, audit/audit_folder.h).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/shard.h"
#include "backend/algorithm_pins.h"
#include "compare/compare.h"
#include "spec/spec.h"
#include "trace/trace.h"
#include "train/trainer.h"

namespace ra::audit {

enum class SeedPolicy { same, different, both };

// Which random streams a "different" run varies; the others keep the spec's seed.
struct VariedStreams {
  bool init = true, data = true, dropout = true;
};

// Test-only fault injection: flip one bit of one element of a tensor in one run at one step, or
// swap two samples of that step's batch. Documented in docs/trace-format.md as a test facility.
struct FaultSpec {
  int run = 0;
  std::int64_t step = 0;
  std::string tensor;        // a parameter name, or "batch" to swap samples 0 and 1 of the batch
  std::int64_t element = 0;  // element of the parameter
  int bit = 0;               // 0 = the lowest mantissa bit
  // Or, instead of a tensor, "LAYER/OP" ("dense_0/dense.forward"): a bit of the first output of
  // that op's first execution in the step, flipped right after it ran (needs --trace-ops).
  std::string op;
};
// "run=1,step=3,tensor=dense_0.weight,element=5,bit=0" or "run=1,step=3,op=dense_0/dense.forward,
// element=5,bit=0".
FaultSpec parse_fault(const std::string& text);

struct SnapshotOptions {
  bool epochs = false;           // weights after every epoch
  std::int64_t every_steps = 0;  // weights after every N-th step (0 = none)
  bool batches = false;          // the sample indices of every batch (batches.json)
};

// What `run` does with an output folder that already holds files of an audit.
enum class FolderUse {
  fresh,      // refuse (InputError) a folder holding another audit or unrecognised run-* files
  overwrite,  // remove the tool's own files (only those), then start a new audit
  resume,     // finish the folder's audit: train only the runs without a whole trace
};

struct AuditOptions {
  int runs = 3;
  SeedPolicy seeds = SeedPolicy::same;
  VariedStreams vary;
  std::optional<spec::KernelMode> mode;
  std::optional<int> threads;
  int jobs = 1;
  std::filesystem::path out_dir;
  FolderUse folder_use = FolderUse::fresh;
  // The report files' paths (--json, --junit): recorded in the manifest when they lie in out_dir,
  // so that --overwrite knows them as the tool's own files.
  std::vector<std::filesystem::path> report_files;
  SnapshotOptions snapshots;
  std::optional<FaultSpec> fault;
  // --trace-ops: the steps whose ops every run records (trace format version 2).
  std::optional<OpWindow> trace_ops;
  // Whether the report measures each op root cause's magnitude by a replay (audit/op_replay.h).
  bool measure_magnitudes = true;
  // --shard K/N: train only shard K's runs of the planned ones (audit/shard.h) into a folder the
  // other shards share; no report (compare the folder once every shard has finished).
  std::optional<Shard> shard;
  // --pin-algorithms: the convolution algorithms every run runs (audit/algorithm_file.h); null:
  // as the mode chooses them.
  std::shared_ptr<const backend::AlgorithmPins> algorithm_pins;
  // --save-algorithms: where the algorithms run 0 used are written once it has finished
  // (audit/algorithm_file.h); empty: not written.
  std::filesystem::path save_algorithms;
  std::optional<bool> expect_identical;  // default: when every run was fully deterministic
  double loss_tolerance = 1e-4;
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
};

// What one shard did, and how far the whole audit is.
struct ShardOutcome {
  Shard shard;
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
  ComparisonResult comparison;                     // not made by a shard
  std::optional<ShardOutcome> shard;               // with options.shard
};

// Seed of run i for a stream varied by --seeds different: a hash of (spec seed, i), stable
// across versions (part of the trace contract).
std::uint64_t derived_seed(std::uint64_t spec_seed, int run);

// InputError (exit 2) when the folder is locked by another audit, holds another audit (fresh), or
// holds an audit other than the one requested (resume: the message lists what differs). With
// options.shard: the shard creates the folder's manifest or joins the audit of the one there (the
// same plan for the same number of shards, else InputError listing what differs), trains those of
// its runs that have no whole trace yet, and makes no report.
AuditResult run_audit(const spec::ExperimentSpec& spec, const AuditOptions& options,
                      const AuditProgress& progress = {});

// What `repro-audit compare` does. A folder with a manifest contributes exactly the manifest's
// runs that have a whole trace of its audit, and names missing runs and foreign files in the
// result's audit_folders; a folder without one (written before manifests) every *.trace.jsonl in
// it, with a note that nothing vouches for them; a file itself (traces from anywhere). Snapshots
// beside a trace are used only when they carry the trace's audit id.
ComparisonResult compare_inputs(const std::vector<std::filesystem::path>& inputs,
                                const ComparisonOptions& options);
// Compares trace files given by name (and the snapshots beside them).
ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                     const ComparisonOptions& options);
// The trace files of a folder (*.trace.jsonl), sorted by name.
std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir);
// The snapshot folder of a trace file: "run-003.trace.jsonl" -> "run-003/".
std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file);

}  // namespace ra::audit
