#pragma once
// Comparison of N traces: every verdict of a report is computed here, from traces (and, for "how
// much", snapshots) only, so an in-process audit and `compare` of files agree by construction.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/audit_folder_check.h"
#include "compare/data_parallel.h"
#include "compare/finding.h"
#include "compare/instability.h"
#include "compare/loader_findings.h"
#include "compare/resume_check.h"
#include "compare/statistics.h"
#include "trace/trace.h"

namespace ra::compare {

// The categories of recorded state, in causal order within a step. Buffers (a model's state that
// is no parameter: BatchNorm's running statistics) are updated in the forward pass, before the
// loss; they are a category of a comparison only when the runs record any (PyTorch traces).
// `steps` is no category of state: the first difference of runs that recorded different numbers
// of steps and agree in every step they share.
enum class Category {
  initial_weights,
  batches,
  buffers,
  losses,
  gradients,
  weights,
  optimizer_state,
  steps
};
inline constexpr Category kCategories[] = {
    Category::initial_weights, Category::batches, Category::buffers,        Category::losses,
    Category::gradients,       Category::weights, Category::optimizer_state};
const char* to_string(Category c);

// Where runs first part in one category (or overall).
struct Divergence {
  Category category = Category::initial_weights;
  std::optional<std::int64_t> step;  // none for initial weights (before step 0)
  std::int64_t epoch = 0, batch = 0;
  std::string tensor;  // parameter name, or indices/inputs/labels/loss/optimizer_state
  // The step recorded one digest for the category (a version 4 trace's level of detail): which of
  // its tensors parted is not known there (`tensor` is empty).
  bool per_category = false;
  std::string tensor_digests{};     // then: the reference trace's plan ("every:1000")
  std::vector<int> runs_differing;  // run indices that differ from the reference run there
  // Category steps: the step counts in words ("run 1 ended after 5 steps, run 0 after 6").
  std::string detail{};
};

// The runs that ran one algorithm at an op or a ledger entry, and what is known of it: from the
// runs' op records (the algorithm each call ran) and ledgers (who chose it, what autotune timed).
struct AlgorithmGroup {
  std::vector<int> runs;  // run indices among the traces
  std::string algorithm;  // "" when the runs name none (no ledger entry, an older trace)
  std::optional<bool> deterministic;
  std::string chosen_by;  // "autotuned", "pinned", "pinned-file", ...; "" when unknown (the CPU)
  std::string math_type;  // as the ledger says; "" when unknown
  std::vector<double> autotune_ms;  // what cudnnFind timed it at, per run that autotuned it
};

// One geometry and direction whose algorithm differs between the runs' ledgers: the runs grouped
// by the algorithm (and math type) they ran, in order of first appearance.
struct LedgerDifference {
  std::string layer;      // the geometry key: "conv 128x32x26x26 k64 3x3 s1 p0"
  std::string direction;  // "forward", "backward_data", ...
  std::vector<AlgorithmGroup> groups;
};

// A PyTorch run's op kept whole (exec --keep-op) and replayed in a fresh process by the recorder
// (lib/python/repro_audit/replay.py, the run's replay.json): how many distinct outputs `times`
// calls on the run's own inputs gave, and whether the first was the run's.
struct KeptOpReplay {
  int run = 0;  // index among the traces
  int times = 0;
  int distinct_outputs = 0;
  bool matches_run = false;
};

// The root cause of a divergence, from op records (--trace-ops, docs/report.md "Root cause"): in
// the first step where a run's op records differ from the reference run's, the first record that
// differs. When its inputs matched and its outputs did not, that op made the difference.
struct RootCause {
  enum class Kind {
    op,              // an op's inputs matched and its outputs did not: the op is the cause
    outside_ops,     // a record's inputs differ with every earlier output the same, or the step's
                     // state differs after identical ops: changed outside the traced ops
    op_sequence,     // the runs executed different ops (a different op, layer or arity)
    outside_window,  // the runs first differ at a step without op records
  };
  Kind kind = Kind::op;
  // What made an op's outputs differ (kind op), worded for what it is (docs/report.md, "Root
  // cause classes"):
  enum class Class {
    nondeterministic_kernel,  // the same algorithm on identical inputs gave other bits
    algorithm_choice,         // the runs ran different algorithms at this op
    fault,                    // the test-only fault injection fired at this op
    environment,              // the runs' fingerprints differ (environment_keys): another machine
                              // or build
  };
  Class cause = Class::nondeterministic_kernel;
  std::int64_t step = 0;
  std::int64_t epoch = 0, batch = 0;
  std::size_t index = 0;   // the record's position in the step (kind op, outside_ops)
  trace::OpRecord record;  // the reference run's record there (op, layer, mode, ledger key)
  std::vector<std::size_t> differing_inputs, differing_outputs;  // positions in record.in/out
  // From the ledger of the run's trace header (GPU): the library algorithm the op ran, keyed by
  // the record's ledger key and the op's direction; empty when the ledger has no such entry.
  std::string algorithm;
  std::optional<bool> algorithm_deterministic;
  // The algorithm each run ran at the op (kind op), the reference run's group first: one group
  // unless the cause is an algorithm choice.
  std::vector<AlgorithmGroup> algorithms;
  // Fingerprint keys that differ from the reference run's and can change bits (cause environment).
  std::vector<std::string> environment_keys;
  std::string detail;  // what differs, in words (outside_ops, op_sequence, outside_window)
  // Every later record of the step whose outputs differ: how far the difference spread, and
  // where an op's inputs matched too, another cause of its own (a second race in the step).
  struct Link {
    std::size_t index = 0;
    std::string op, layer;
    bool inputs_identical = false;
  };
  std::vector<Link> chain;
  std::size_t step_records = 0;  // records in the step (the chain's denominator)
  std::vector<int> runs;         // the runs with this root cause (indices among the traces)

  // How much the op's outputs differ (kind op): measured by replaying the reference run to the
  // op and executing the op on the recorded inputs until each run's recorded outputs appear
  // (audit/op_replay.h, docs/report.md "Magnitude"). The traces hold digests, not values.
  struct OutputDifference {
    std::size_t output = 0;  // position in record.out
    DType dtype = DType::f32;
    std::int64_t elements = 0;
    TensorDifference difference;  // max_abs and max_ulp for f32 outputs only
  };
  struct RunMagnitude {
    int run = 0;                            // index among the traces, as in `runs`
    std::vector<OutputDifference> outputs;  // every output that differs from the reference's
  };
  struct Magnitude {
    std::vector<RunMagnitude> runs;  // the runs whose outputs the replay reproduced
    int kept = 0;        // runs whose outputs were kept as they ran (the reference's included)
    int replays = 0;     // replays of the reference run started
    int executions = 0;  // executions of the op in the last replay
    int distinct_outputs = 0;  // distinct outputs among them
    // With more than one: how far the op's outcomes on the recorded inputs are from the first
    // execution's, per output (the widest over the outcomes): the size of its nondeterminism
    // there, measured also when a run's own outputs did not reappear.
    std::vector<OutputDifference> spread;
    std::string note;  // why a run (or every run) has no magnitude; empty when all were measured
    std::vector<KeptOpReplay> kept_replays;  // PyTorch runs' replays of the kept op (above)
  };
  std::optional<Magnitude> magnitude;  // absent until measured (never for the other kinds)
};
const char* to_string(RootCause::Kind kind);
// "nondeterministic_kernel", "algorithm_choice", "fault", "environment"
const char* to_string(RootCause::Class cause);

struct CategoryVerdict {
  Category category = Category::initial_weights;
  bool identical = true;
  std::optional<Divergence> first;
  std::int64_t steps_differing = 0;  // steps at which any compared run differs in this category
};

struct LossDifference {
  std::int64_t step = 0;
  int run = 0;  // the run whose loss differs most from the reference at that step
  float reference = 0, other = 0;
  std::uint64_t ulp = 0;
};

// Divergence measured from snapshots (safetensors) of the same point in two runs.
struct TensorDivergence {
  std::string tensor;
  TensorDifference difference;  // worst over the compared runs against the reference
};
struct SnapshotDivergence {
  std::string point;                 // "initial", "step-17", "epoch-1", "final"
  std::optional<std::int64_t> step;  // after which step (none for initial)
  std::vector<TensorDivergence> tensors;
  TensorDifference total;  // over all tensors
};

// Per-epoch growth from the traces alone: how far the losses of the compared runs are from the
// reference run's, and how many parameter digests differ at the epoch's last step.
struct EpochGrowth {
  std::int64_t epoch = 0;
  double max_abs_loss_difference = 0.0;
  std::uint64_t max_loss_ulp = 0;
  // Parameters whose digest differs in some run at the epoch's end; none when its last step
  // recorded one digest per category (a version 4 trace's level of detail).
  std::optional<int> weights_differing = 0;
  std::optional<double> max_abs_eval_accuracy_difference;
  std::optional<TensorDifference> snapshot;  // from the epoch's snapshots, when written
};

struct RunSummary {
  int run = 0;
  std::string seed_group;
  std::uint64_t seed_init = 0, seed_data = 0, seed_dropout = 0;
  std::int64_t steps = 0;
  float final_loss = 0;
  std::uint32_t final_loss_bits = 0;
  std::optional<double> eval_accuracy, eval_loss;
  double median_step_seconds = 0;
  double total_seconds = 0;  // the run's wall time, training and recording
  // What recording added to a step: measured (the run's median step against steps trained with
  // recording off: trace::RecordingCost) where the trace says, else the recorder's summed time
  // over the steps' time (traces of PyTorch scripts, older traces).
  double recording_fraction = 0;
  bool recording_measured = false;
  int outcome_class = 0;
  std::string source;
};

// A compared run outside the reference run's outcome class whose environment fingerprint differs
// from the reference run's (shards on different nodes): the likely explanation of its divergence.
// A ledger difference alone (autotune choosing otherwise on the same machine) is no other machine:
// ledger_differences and the root cause's algorithm choice say it.
struct MachineDifference {
  int run = 0;                           // report index
  std::vector<std::string> environment;  // fingerprint keys that differ (record/environment.h)
  bool ledger = false;                   // its algorithm ledger differs too
};

struct GroupStatistics {
  std::string group;  // "same", "different" or "perturbed"
  Summary final_loss, eval_accuracy, median_step_ms;
};
// The first differing and the final loss (the run farthest in ulp); all finals within tolerance?
struct LossDifferences {
  std::optional<LossDifference> first, final;
  double tolerance = 1e-4;       // relative (--tolerance)
  bool within_tolerance = true;  // of the reference's final loss
};
// Each seed group's statistics by name; with --seeds both, the same/different std ratios.
struct SeedGroupStatistics {
  std::vector<GroupStatistics> groups;
  std::optional<RatioEstimate> loss_std_ratio, accuracy_std_ratio;
};

// Per step, for the plots of the HTML report (report/html_report.h). Not in the JSON report, which
// carries the verdicts and the figures exactly.
struct StepSeries {
  std::vector<std::vector<float>> losses;  // per run (report order), its loss at each of its steps
  // The map of where digests differ: one row per recorded tensor of a step, in causal order
  // (batch indices, inputs, labels, loss, gradients last layer first, weights, optimizer state),
  // with, per step the compared runs share, whether some compared run differs there from the
  // reference run.
  struct Row {
    Category category = Category::batches;
    std::string tensor;
    std::vector<bool> differs;
  };
  std::vector<Row> rows;
};

struct DistributedFindings;  // below

struct ComparisonResult;

struct ComparisonOptions {
  // Whether bitwise identity of the same-seed runs is expected (decides the exit code). Default:
  // expected when every trace ran every reducing op in deterministic mode.
  std::optional<bool> expect_identical;
  // Relative tolerance of the "within tolerance" verdict on final losses (a separate verdict from
  // bitwise identity, never a substitute for it).
  double loss_tolerance = 1e-4;
  // --allow-empty: an audit that compared nothing (fewer than two same-seed runs) is no failure.
  bool allow_empty = false;
  // --align: the two traces are of two programs that should compute the same (docs/equivalence.md,
  // "Aligning two programs' ops"): their specs may differ, their op records are aligned by
  // (layer, op) into a finding of their own (compare/program_alignment.h) instead of paired by
  // position into root causes, and check_alignable says what cannot be aligned.
  bool align = false;
  // --expect equivalent: the traces are two programs, A and B, that should compute the same up to
  // rounding (another reduction order), and perturbed runs of A that measure what rounding alone
  // grows into (compare/equivalence_floor.h, docs/equivalence.md "The floor"). B is judged against
  // that floor, a finding of its own; bitwise identity is not expected of A and B.
  bool expect_equivalent = false;
  // --floor-margin: B is beyond the floor where its distance from A exceeds this many floors.
  double equivalence_margin = 10.0;
  // Loads a snapshot of run `run` at `point` ("initial", "final", "epoch-<e>", "step-<s>"); returns
  // false when it was not written. Null: no snapshots.
  std::function<bool(int run, const std::string& point,
                     std::vector<std::pair<std::string, Tensor>>&)>
      load_snapshot;
  // The command that re-runs the audit with --trace-ops WINDOW (and --tensor-digests WINDOW when
  // `tensor_digests`): the next step's command, where whoever compares knows it (`run`, `exec`;
  // not `compare` of files). Null: the report words the re-run instead. An input, so that nothing
  // after the comparison patches its result (issue 60).
  std::function<std::string(const std::string& window, bool tensor_digests)> rerun_command;
  // A data-parallel audit's ranks, replicas and collective, from the rank traces beside the runs'
  // (lib/audit reads them); null, or none returned: single processes.
  std::function<std::optional<DistributedFindings>(const std::vector<trace::Trace>&)> distributed;
  // The outputs run `run` kept of record `index` of step `step` (a PyTorch run's kept-outputs file,
  // rundir/kept_outputs_file.h): with --align, how far apart the op where two programs part put
  // its outputs. Null, or none returned: not kept.
  struct KeptRecordOutputs {
    std::vector<std::vector<unsigned char>> bytes;  // per output, in the record's order
    std::vector<DType> dtypes;
  };
  std::function<std::optional<KeptRecordOutputs>(int run, std::int64_t step, std::size_t index)>
      load_kept_outputs;
  // Run `run`'s predicted classes of the eval set (its end record's predictions file, checked
  // against the record: rundir/predictions_file.h); none when it recorded none. Null: no churn.
  std::function<std::optional<std::vector<std::int64_t>>(int run)> load_predictions;
  // The audit folders the traces were read from, with what each holds (complete or not), as
  // whoever read them found them (lib/audit); empty for trace files named alone.
  std::vector<AuditFolderCheck> audit_folders;
  // The last phase before the registered checks, where whoever compares has the run folders:
  // the root causes' magnitudes and kept-op replays (lib/audit measures them). Null: none.
  std::function<void(ComparisonResult& result, const std::vector<trace::Trace>& traces)>
      measure_magnitudes;
  // Called once the comparison is made: the side files beside the traces that were not used (of
  // another audit), for the report. Null: none.
  std::function<std::vector<std::string>()> ignored_snapshots;
};

// Data-parallel runs (docs/distributed.md). Rank r of every run against rank r of the reference
// run, a comparison of its own; rank 0's is the report's.
struct RankComparison {
  int rank = 0;
  bool identical = true;
  std::optional<Divergence> first_divergence;
};

// Where, within one run, a replica's parameters first parted from rank 0's after a step (step
// -1: the initial weights). `tensor` is empty when the step kept one digest for all weights.
struct ReplicaDivergence {
  int run = 0;
  std::int64_t step = -1;
  std::string tensor;
  int rank = 1;
};

struct DistributedFindings {
  int world_size = 1;
  std::string backend;
  std::vector<std::pair<std::string, std::string>> nccl;  // NCCL_ALGO, NCCL_PROTO when set
  std::string comm_hook;  // the reference run's wrapped DDP hook; "": no bucket recorded
  std::optional<CollectiveDivergence> collective;
  std::optional<BucketLayoutDifference> bucket_layout;
  std::vector<RankComparison> ranks;  // ranks 1 .. world_size - 1
  int runs_checked = 0;               // runs whose replicas were checked against each other
  std::optional<ReplicaDivergence> replicas_parted;
  // Differences between the ranks of a run that data parallelism expects, in words.
  std::vector<std::string> expected_differences;
  bool rank_diverged() const {
    for (const RankComparison& r : ranks)
      if (!r.identical) return true;
    return false;
  }
};

// How the differences grow: per epoch (text, JSON) and per step (the HTML plots).
struct GrowthFindings {
  std::vector<EpochGrowth> epochs;
  StepSeries steps;
};

// The spine's verdict of identity (compare/verdict.h): which runs were compared, whether their
// outcomes are one class, whether they were expected to be, and the ways nothing was compared.
struct IdentityFindings {
  std::vector<std::vector<int>> classes;  // bitwise-identical outcomes, by first run index
  std::vector<int> compared_runs;         // runs that are expected to agree (same seeds)
  bool expect_identical = true;
  bool identical = true;  // the compared runs are all in one class
  // Every compared run recorded no step (a script that never calls rec.step).
  bool no_steps = false;
  // The runs are all of the different-seed group (at least two): the audit asked for the spread.
  bool spread_only = false;
  bool allow_empty = false;  // --allow-empty: nothing compared is no failure
};

// Where the traces came from, as far as the verdict depends on it.
struct TraceSources {
  // Runs given twice (duplicate_runs.h), groups of run indices; allowed, each group warned of
  // (compare/warnings_finding.cpp).
  std::vector<std::vector<int>> copies;
  // The folders the traces came from (ComparisonOptions::audit_folders).
  std::vector<AuditFolderCheck> audit_folders;
  // Snapshots beside a trace that were not used: of another audit than the trace (stale files).
  std::vector<std::string> ignored_snapshots;
};

// What the comparison is of: the spec its runs trained, and their mode.
struct AuditSubject {
  std::string spec_name;
  std::string spec_digest;
  std::string mode_summary;  // "deterministic", "nondeterministic", "mixed (...)"
  // The runs are PyTorch runs (exec): their "mode" is only whether the script turned on
  // torch.use_deterministic_algorithms, no kernel mode the audit chose; the text says so.
  bool pytorch = false;
};

// Where the differing runs first part op by op, from their op records (--trace-ops).
struct RootCauseFindings {
  bool ops_traced = false;                   // some trace has op records (format version 2)
  std::optional<trace::OpWindow> op_window;  // the reference run's window, with op records
  // The root cause of each differing run, grouped (runs with the same cause), earliest first (by
  // step, then record). Empty when no trace has op records.
  std::vector<RootCause> causes;
  // The step records of the runs at their root causes' steps (trace index, record): what a
  // magnitude's replay reads (audit/op_replay.h) when the traces were walked from their files and
  // hold no steps (Trace::steps_in_source).
  std::vector<std::pair<int, trace::StepRecord>> steps;
};

// The report's next step: a --trace-ops re-run that would localise the divergence, or the loader
// to watch; none when the evidence explains the difference already.
struct NextStep {
  // The --trace-ops window: the first divergent step's, when the runs part without op records
  // there (none recorded, or outside the window).
  std::optional<trace::OpWindow> trace_ops;
  // With it, when the first divergence is at a step recorded per category (a level of detail):
  // the re-run records that step per tensor too (--tensor-digests), to name the tensor.
  bool tensor_digests = false;
  // Batches part (PyTorch runs): watch the loader instead of --trace-ops (then none suggested).
  std::optional<LoaderAdvice> loader_advice;
  // The command that re-runs the audit with that window, when the caller knows it (`run`).
  std::string command;
};

struct ComparisonResult {
  AuditSubject subject;
  std::vector<RunSummary> runs;
  IdentityFindings identity;
  std::vector<CategoryVerdict> categories;
  std::optional<Divergence> first_divergence;
  RootCauseFindings root_cause;
  LossDifferences losses;
  GrowthFindings growth;
  std::vector<SnapshotDivergence> snapshots;
  SeedGroupStatistics seed_groups;
  std::vector<MachineDifference> divergent_machines;  // shown next to the divergence
  TraceSources sources;
  // The registered checks' findings (compare/checks.h), each with its own verdict.
  std::vector<Finding> findings;
  // Runs of several world sizes (compare/data_parallel.h): they may differ; runs of one may not.
  std::optional<WorldSizes> world_sizes;
  // Some check of the audit's verdict fails with a difference (compare/verdict.h): the same-seed
  // runs or a finding (a rank, the replicas, the world sizes of one command, a resume, ...).
  bool diverged() const;
  // Nothing was compared, no verdict (exit 5) unless allow_empty (--allow-empty): fewer than two
  // same-seed runs, or no step recorded; not different-seed runs only, whose result is their
  // statistics.
  bool nothing_compared() const;
  // What to do next (decide_next_step in compare.cpp, one rule over the spine and the findings).
  NextStep next_step;
  // Planned runs of an audit folder have no whole trace (a shard not finished, a run killed): the
  // verdict is over part of the audit.
  bool incomplete() const {
    for (const AuditFolderCheck& f : sources.audit_folders)
      if (!f.missing_runs.empty()) return true;
    return false;
  }
};

// InputError when the traces cannot be compared: none given, different specs (digests), different
// parameter lists; with options.align, what check_alignable names. Traces held whole are walked in
// memory; traces read without their steps (read_trace_summary, trace/trace_reader.h) are walked
// from their files, all runs a step at a time (compare/step_walk.h), so that no run is held whole.
ComparisonResult compare_traces(const std::vector<trace::Trace>& traces,
                                const ComparisonOptions& options);

// The JSON report but the sections' keys, which report::render_json adds (report/sections.h).
nlohmann::json to_json(const ComparisonResult& result);
// A divergence in the JSON report: category, step, epoch, batch, tensor, runs differing; the runs
// grouped by the algorithm they ran.
nlohmann::json divergence_json(const std::optional<Divergence>& d);
nlohmann::json algorithm_groups_json(const std::vector<AlgorithmGroup>& groups);

// The runs first part at or after a resume that is not exact: the resume check explains where
// they part (its pieces and the signature of the first difference), so no loader advice or
// word about seeding the loader is given for it (issue 61).
bool divergence_follows_resume(const ComparisonResult& r);

// The report's next step in words, one line each (text, HTML, JUnit and JSON say the same): the
// loader advice, or why --trace-ops of the suggested window; none when there is no next step.
std::vector<std::string> next_step_advice(const ComparisonResult& r);

}  // namespace ra::compare
