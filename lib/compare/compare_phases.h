#pragma once
// The phases of compare_traces (compare/compare.h), in the order it runs them. Each is a function
// of the traces (and of what earlier phases found), so each can be tested on traces built in
// memory. One file each:
//   compare_runs.cpp         which traces can be compared; per-run summaries and outcome classes;
//                            the same-seed runs expected to agree
//   compare_categories.cpp   per category, the first divergence and the steps that differ
//   compare_losses.cpp       how far losses part: first and final difference, tolerance verdict
//   compare_growth.cpp       per epoch, how far the runs have drifted
//   compare_snapshots.cpp    divergence measured from weight snapshots
//   compare_seed_groups.cpp  outcome statistics per seed group, same/different std ratios
//   compare_instability.cpp  the perturbed group: its first divergence, the instability finding
//   compare_environment.cpp  environment fingerprint differences, runs on other machines
//   compare_algorithms.cpp   the algorithm each run ran at an op; ledger differences by run group
//   compare_loader_workers.cpp  random streams data-loader workers share within a run
//   compare_next_step.cpp    the loader advice when batches part; the next step in words
//   compare_recorder_checks.cpp  the PyTorch recorder's warnings; seeds that never applied
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::compare::phases {

// InputError when the traces cannot be compared: none given, a run without its end record,
// different specs (digests), different parameter lists. Of two programs (`two_programs`: --align,
// --expect equivalent) only that each run is whole: their specs differ by design, and their
// parameters are checked by compare_traces with the words of the option.
void check_comparable(const std::vector<trace::Trace>& traces, bool two_programs = false);

// Whether every trace ran every reducing op deterministic (then identity is expected by default).
bool all_fully_deterministic(const std::vector<trace::Trace>& traces);
// Every trace is a PyTorch script's (exec's; backend "pytorch-..."), and there is one at least.
bool all_pytorch(const std::vector<trace::Trace>& traces);
// What the verdict expects of traces no manifest speaks for (trace files named alone): the
// default of the command that made them, so that `compare` of files fails what that command
// failed. exec's runs (PyTorch traces) are expected identical (its question is why runs of one
// command differ); the engine's when every reducing op ran deterministic.
bool default_expectation(const std::vector<trace::Trace>& traces);

// One summary per run, in trace order; the classes of bitwise-identical outcome (everything
// recorded, timings excluded), numbered by first appearance; the kernel-mode policy of the runs
// ("mixed" when they differ).
struct RunSummaries {
  std::vector<RunSummary> runs;
  std::vector<std::vector<int>> classes;
  std::string mode_summary;
};
RunSummaries summarize_runs(const std::vector<trace::Trace>& traces);
// The same with each run's outcome signature (everything it recorded, timings excluded) given, as
// the walk over the steps folds it (step_walk.h).
RunSummaries summarize_runs(const std::vector<trace::Trace>& traces,
                            const std::vector<Digest128>& outcomes);

// The runs expected to agree: those in neither the "different" nor the "perturbed" seed group, the
// first the reference;
// and the number of steps every one of them recorded.
struct ComparedRuns {
  std::vector<const trace::Trace*> traces;
  std::vector<int> ids;  // their indices among all traces
  std::int64_t common_steps = 0;
};
ComparedRuns same_seed_runs(const std::vector<trace::Trace>& traces);
// Whether the compared runs share one outcome class (`runs`: summarize_runs's): the verdict.
bool all_in_one_class(const ComparedRuns& compared, const std::vector<RunSummary>& runs);

// World size as a configuration (compare_world_sizes.cpp): why trace `i` cannot be compared with
// the earlier ones for its spec ("" when it can: a PyTorch run of a world size no earlier run has
// may come from another command, as a launcher's); and, for runs of several world sizes, each
// run's and whether the runs of each agree (none for runs of one world size).
std::string other_spec_problem(const std::vector<trace::Trace>& traces, std::size_t i);
std::optional<WorldSizes> world_sizes(const std::vector<trace::Trace>& traces,
                                      const ComparedRuns& compared,
                                      const std::vector<RunSummary>& runs);

// Root causes from op records (compare_root_cause.cpp), found by the walk over the steps
// (step_walk.h): a compared run's cause before step 0 (its initial state differs from the
// reference's), or none;
std::optional<RootCause> initial_root_cause(const trace::Trace& ref, const trace::Trace& other);
// the cause at the first step where its records differ from the reference run's (`ref_run`,
// `run`: their indices among the traces), classified when an op is the cause; none when the two
// steps agree;
std::optional<RootCause> step_root_cause(const trace::Trace& ref, int ref_run,
                                         const trace::StepRecord& a, const trace::Trace& other,
                                         int run, const trace::StepRecord& b);
// and the causes of every differing run (run index, cause), grouped by cause, earliest first.
std::vector<RootCause> group_root_causes(std::vector<std::pair<int, RootCause>> found);
// With op records, the root cause of each compared run that differs from the reference, grouped
// by cause, earliest first (a walk over traces in memory).
std::vector<RootCause> root_causes(const ComparedRuns& compared);

// The tensors of one category at one step (or before step 0), in causal order, with their names
// (compare_categories.cpp); a category's first divergence among the compared runs' slots (the
// reference first, `ids` their run indices), located at step record `at` (none: before step 0).
struct Slot {
  std::string name;
  Digest128 value;
};
std::vector<Slot> initial_slots(Category c, const trace::Trace& t);  // initial_weights, buffers
std::vector<Slot> step_slots(Category c, const trace::TraceHeader& h, const trace::StepRecord& r);
// Whether a category is recorded per tensor at some steps and per category at others (version 4,
// trace/tensor_digests.h): gradients, weights and buffers.
bool has_levels_of_detail(Category c);
// One digest over a category's tensors at a step (category_digest), however the step recorded
// them: what steps compare by when some run recorded one of them per category.
Digest128 combined_digest(Category c, const trace::StepRecord& r);
// The category's tensor names (the per-tensor slots' names, in their order).
std::vector<std::string> slot_names(Category c, const trace::TraceHeader& h);
std::optional<Divergence> slots_divergence(Category c, const std::vector<std::vector<Slot>>& runs,
                                           const std::vector<int>& ids,
                                           const trace::StepRecord* at);
// Whether the compared runs record buffers (a category only then).
bool has_buffers(const ComparedRuns& compared);

// For each category (kCategories order): the first divergence from the reference run and the
// number of steps at which some compared run differs. All identical with fewer than two runs.
std::vector<CategoryVerdict> category_verdicts(const ComparedRuns& compared);
// Every run's losses, and per recorded tensor of a step and per common step whether a compared run
// differs from the reference there.
StepSeries step_series(const std::vector<trace::Trace>& traces, const ComparedRuns& compared);
// The earliest of the categories' first divergences, ties broken by causal (category) order.
std::optional<Divergence> first_divergence(const std::vector<CategoryVerdict>& verdicts);
// When the compared runs recorded different numbers of steps: a divergence of category steps at
// the first step not every run has, its detail naming the counts ("run 1 ended after 5 steps,
// run 0 after 6"); the first difference of runs that agree in every step they share.
std::optional<Divergence> step_count_divergence(const ComparedRuns& compared);

// The first step whose loss differs, the final loss difference (each: the run farthest in ulp
// from the reference) and whether every final loss is within `tolerance` (relative) of the
// reference's (LossDifferences, compare/compare.h).
LossDifferences loss_differences(const ComparedRuns& compared, double tolerance);
// The same with the first difference found by a walk over the steps (step_walk.h).
LossDifferences loss_differences(const ComparedRuns& compared, double tolerance,
                                 const std::optional<LossDifference>& first);

// Snapshot divergence at `point` ("initial", "epoch-1", ...) between the reference and every
// other compared run; none when no snapshots are loaded or the reference has none there.
std::optional<SnapshotDivergence> snapshot_divergence(const ComparisonOptions& options,
                                                      const std::vector<int>& ids,
                                                      const std::string& point,
                                                      std::optional<std::int64_t> step);
// The snapshots a report shows: initial, after the first divergence step, final.
std::vector<SnapshotDivergence> snapshot_divergences(const ComparisonOptions& options,
                                                     const ComparedRuns& compared,
                                                     const std::optional<Divergence>& first);

// Per epoch of the reference run (none with fewer than two compared runs): loss distance over its
// steps, parameters differing at its last step, eval accuracy distance, snapshot distance.
std::vector<EpochGrowth> epoch_growth(const ComparedRuns& compared,
                                      const ComparisonOptions& options);
// The same from the losses per epoch a walk over the steps gathered (step_walk.h).
struct EpochLosses;
std::vector<EpochGrowth> epoch_growth(const ComparedRuns& compared,
                                      const ComparisonOptions& options,
                                      const std::vector<EpochLosses>& losses);

// Final loss, eval accuracy and median step time per seed group (a run without a group counts as
// "same"), by group name; with both groups, the same/different std ratios.
SeedGroupStatistics seed_group_statistics(const std::vector<RunSummary>& runs);

// With a perturbed group (compare_instability.cpp): a warning for each perturbed run whose initial
// weights do not part from the reference's exactly at its flipped weight.
std::vector<std::string> perturbation_warnings(const InstabilityFindings& found);

// The --trace-ops window that would name the op where the runs part (NextStep::trace_ops), from
// the first divergence and the root causes found.
std::optional<trace::OpWindow> suggested_trace_ops(const ComparisonResult& result);
// With it, whether the re-run records that step per tensor too (NextStep::tensor_digests): the
// first divergence is at a step recorded per category.
bool suggest_tensor_digests(const ComparisonResult& result);

// Environment keys that differ from run 0's, one line each (each distinct line once).
std::vector<std::string> environment_differences(const std::vector<trace::Trace>& traces);
// When the runs did not set a framework's determinism switches alike (PyTorch traces:
// deterministic_algorithms, cudnn_deterministic, cudnn_benchmark, cublas_workspace_config), a
// warning naming each switch and the runs' values: they are different configurations, so their
// agreement or disagreement says nothing about repeats of one. None unless every trace has the
// switches (a cross-check against the engine compares two implementations, not two settings).
std::optional<std::string> determinism_flags_warning(const std::vector<trace::Trace>& traces);
// The PyTorch recorder's warnings (header recorder_warnings: rec.step before optimizer.step...),
// each once, with the runs it came from.
std::vector<std::string> recorder_warnings(const std::vector<trace::Trace>& traces);
// Runs given different seeds whose random states (header rng_states, taken when the recorder was
// made) are the same for some stream: the seed never reached it. The warning names the streams
// and, from seed_everything's record (header seeded), why. None with one seed or no states.
std::optional<std::string> unapplied_seeds_warning(const std::vector<trace::Trace>& traces);
// Runs whose epoch 0 has no step and whose steps start in epoch 1 (a script that counts its
// epochs from 1): said, so that the empty epoch is not a silent row.
std::optional<std::string> empty_first_epoch_warning(const std::vector<trace::Trace>& traces);
// The fingerprint keys of two runs that differ and can change bits: every key but those that
// name the machine without deciding what it computes (hostname, logical_cpus, os).
std::vector<std::string> numeric_environment_differences(const trace::TraceHeader& a,
                                                         const trace::TraceHeader& b);

// The algorithm run `run` (`trace`) ran at one of its op records: the record's own (newer traces),
// else its ledger's entry of the record's key and direction; with who chose it and what autotune
// timed from the ledger. A group of one run; no algorithm when neither names one.
AlgorithmGroup algorithm_at(const trace::Trace& trace, int run, const trace::OpRecord& record);
// Groups of one run merged by algorithm and math type (and who chose it, with `by_chooser`), in
// order of first appearance.
std::vector<AlgorithmGroup> merge_algorithm_groups(const std::vector<AlgorithmGroup>& singles,
                                                   bool by_chooser);
// When runs ran algorithms pinned from a file (--pin-algorithms) that are not deterministic, a
// warning naming them (the reference run's): pinning fixes which algorithm runs, not its atomics.
std::optional<std::string> pinned_nondeterministic_warning(const std::vector<trace::Trace>& traces);
// Every ledger geometry and direction whose entries differ between the traces (algorithm, math
// type, who chose it; autotune's timing is measured anew each run and never a difference), in
// order of first appearance; a run without the entry is a group with no algorithm. `ledgers`: the
// runs' ledgers (trace headers), by run index.
std::vector<LedgerDifference> ledger_differences(const std::vector<const nlohmann::json*>& ledgers);
// The compared runs outside the reference run's outcome class whose environment or ledger differs
// from the reference run's.
std::vector<MachineDifference> divergent_machines(const ComparedRuns& compared,
                                                  const std::vector<std::vector<int>>& classes);

// Streams that two or more workers of one loader pass started from in the same state, over every
// trace that recorded its loader's workers; none recorded: no findings at all.
std::optional<LoaderWorkerFindings> loader_worker_findings(const std::vector<trace::Trace>& traces);

// PyTorch runs whose first divergence is a batch: what to watch in the loader (the findings on
// its workers included), in place of a --trace-ops window; none otherwise.
// `reference_indices`: the reference run's sample-indices digest at that step (step_walk.h).
std::optional<LoaderAdvice> loader_advice(const ComparisonResult& result,
                                          const ComparedRuns& compared,
                                          const std::optional<Digest128>& reference_indices);

}  // namespace ra::compare::phases
