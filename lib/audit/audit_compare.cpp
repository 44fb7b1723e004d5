// Comparison of traces read from files and audit folders, with the snapshots beside them
// (`repro-audit compare`, and the report of `run`): audit/audit_compare.h.
#include "audit/audit_compare.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "audit/op_replay.h"
#include "compare/collective_check.h"
#include "compare/replica_check.h"
#include "core/error.h"
#include "formats/safetensors.h"
#include "record/run_observers.h"
#include "rundir/kept_op_replay.h"
#include "rundir/kept_outputs_file.h"
#include "rundir/predictions_file.h"
#include "rundir/rank_traces.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::audit {
namespace {

// Loads the snapshots beside compared traces: run i's folder is snapshot_dir_of(its source), and
// a snapshot counts only when it carries the trace's audit id (both empty for older files): a
// stale file of another audit in the same folder is never measured, and is named in `ignored`.
compare::ComparisonOptions with_snapshots(compare::ComparisonOptions options,
                                          const std::vector<trace::Trace>& traces,
                                          std::shared_ptr<std::set<std::string>> ignored) {
  struct Source {
    std::filesystem::path dir;
    std::string audit_id;
  };
  std::vector<Source> sources;
  for (const trace::Trace& t : traces)
    sources.push_back({rundir::snapshot_dir_of(t.source), t.header.audit_id});
  options.load_snapshot = [sources = std::move(sources), ignored = std::move(ignored)](
                              int run, const std::string& point,
                              std::vector<std::pair<std::string, Tensor>>& out) {
    const Source& source = sources.at(static_cast<std::size_t>(run));
    const auto path = record::SnapshotWriter::file_for(source.dir, point);
    if (!std::filesystem::exists(path)) return false;
    formats::SafetensorsFile file = formats::read_safetensors(path);
    const auto id = file.metadata.find("audit_id");
    const std::string snapshot_audit = id == file.metadata.end() ? "" : id->second;
    if (snapshot_audit != source.audit_id) {
      ignored->insert(
          path.string() + ": " +
          (snapshot_audit.empty() ? "has no audit id" : "belongs to audit " + snapshot_audit) +
          ", its trace to " + (source.audit_id.empty() ? "none" : "audit " + source.audit_id));
      return false;
    }
    out = std::move(file.tensors);
    return true;
  };
  std::vector<std::pair<std::string, std::optional<trace::PredictionsRecord>>> predictions;
  for (const trace::Trace& t : traces) predictions.emplace_back(t.source, t.final->predictions);
  options.load_predictions =
      [predictions = std::move(predictions)](int run) -> std::optional<std::vector<std::int64_t>> {
    const auto& [source, record] = predictions.at(static_cast<std::size_t>(run));
    if (!record || source.empty()) return std::nullopt;
    // A trace copied without its folder has no disagreement (the finding notes it); a file that
    // is there must be the run's (read_predictions_file refuses any other).
    if (!std::filesystem::exists(std::filesystem::path(source).parent_path() / record->file)) {
      return std::nullopt;
    }
    return rundir::read_predictions_file(source, *record);
  };
  return options;
}

bool is_pytorch_trace(const trace::Trace& t) {
  return t.header.backend.starts_with("pytorch");
}

// The outputs PyTorch runs kept (rundir/kept_outputs_file.h), from each one's snapshot folder,
// into `store` under the run's index; files not used are named in `ignored`.
// What a PyTorch trace's run kept (none for another trace); a file not used is named in `ignored`.
std::vector<rundir::KeptOutputsEntry> kept_entries_of(const trace::Trace& t,
                                                      std::set<std::string>& ignored) {
  std::vector<rundir::KeptOutputsEntry> entries;
  if (!is_pytorch_trace(t) || t.source.empty()) return entries;
  const std::string why = rundir::load_kept_outputs(
      rundir::snapshot_dir_of(t.source) / rundir::kKeptOutputsFileName, t.header, entries);
  if (!why.empty()) ignored.insert(why);
  return entries;
}

void load_kept_files(const std::vector<trace::Trace>& traces, record::KeptOutputs& store,
                     std::set<std::string>& ignored) {
  for (const trace::Trace& t : traces) {
    for (rundir::KeptOutputsEntry& e : kept_entries_of(t, ignored)) {
      store.keep(t.header.run_index, e.step, e.index, {std::move(e.bytes), std::move(e.dtypes)});
    }
  }
}

// With --align: the outputs each PyTorch trace's run kept (its kept-outputs file), by trace index,
// for the magnitude of the op where the two programs part (compare/parting_magnitude.h). Files
// not used are named in `ignored`.
void add_kept_outputs_of_programs(compare::ComparisonOptions& options,
                                  const std::vector<trace::Trace>& traces,
                                  std::set<std::string>& ignored) {
  if (!options.align) return;
  using Key = std::tuple<int, std::int64_t, std::size_t>;
  auto kept = std::make_shared<std::map<Key, compare::ComparisonOptions::KeptRecordOutputs>>();
  for (std::size_t i = 0; i < traces.size(); ++i) {
    for (rundir::KeptOutputsEntry& e : kept_entries_of(traces[i], ignored)) {
      (*kept)[{static_cast<int>(i), e.step, e.index}] = {std::move(e.bytes), std::move(e.dtypes)};
    }
  }
  options.load_kept_outputs =
      [kept](int run, std::int64_t step,
             std::size_t index) -> std::optional<compare::ComparisonOptions::KeptRecordOutputs> {
    const auto found = kept->find({run, step, index});
    if (found == kept->end()) return std::nullopt;
    return found->second;
  };
}

// The traces with the step records of their root causes' steps, which traces walked from their
// files do not hold (Trace::steps_in_source): what a magnitude's replay reads.
std::vector<trace::Trace> with_cause_steps(const std::vector<trace::Trace>& traces,
                                           const compare::ComparisonResult& result) {
  std::vector<trace::Trace> out = traces;
  for (const auto& [run, record] : result.root_cause.steps) {
    trace::Trace& t = out.at(static_cast<std::size_t>(run));
    if (t.steps_in_source) t.steps.push_back(record);
  }
  return out;
}

// The magnitude of each op root cause: the one step of a comparison that may train (the replay of
// audit/op_replay.h, which re-runs the reference run to the op). Outputs the runs kept are used
// first: an in-process audit's (options.kept_outputs), or PyTorch runs' files, which are all
// there is for those (they cannot be replayed), with their kept ops' replays
// (rundir/kept_op_replay.h). Files not used are named in `ignored`.
void add_magnitudes(compare::ComparisonResult& result, const std::vector<trace::Trace>& traces,
                    const AuditComparisonOptions& options, std::set<std::string>& ignored) {
  record::KeptOutputs from_files(std::numeric_limits<std::size_t>::max());
  const bool pytorch = std::any_of(traces.begin(), traces.end(), is_pytorch_trace);
  if (pytorch) load_kept_files(traces, from_files, ignored);
  const std::vector<trace::Trace> at_causes = with_cause_steps(traces, result);
  measure_magnitudes(result, at_causes, {}, pytorch ? &from_files : options.kept_outputs);
  if (pytorch) {
    std::vector<std::string> unread;
    rundir::load_kept_replays(result, at_causes, unread);
    ignored.insert(unread.begin(), unread.end());
  }
}

// Rank `rank` of each of `runs` compared with the reference's rank `rank`.
compare::RankComparison compare_rank(const std::vector<const trace::Trace*>& runs, int rank,
                                     const compare::ComparisonOptions& given) {
  std::vector<trace::Trace> traces;
  for (const trace::Trace* t : runs)
    traces.push_back(trace::read_trace_summary(rundir::rank_trace_path(t->source, rank)));
  compare::ComparisonOptions options;
  options.expect_identical = given.expect_identical;
  options.loss_tolerance = given.loss_tolerance;
  const compare::ComparisonResult result = compare::compare_traces(traces, options);
  return compare::RankComparison{rank, result.identity.identical, result.first_divergence};
}

// The replicas of one run checked against each other, until the first run whose replicas part.
void check_replicas(const std::vector<trace::Trace>& ranks, int run,
                    compare::DistributedFindings& f) {
  if (f.replicas_parted) return;
  ++f.runs_checked;
  if (f.expected_differences.empty())
    f.expected_differences = compare::expected_rank_differences(ranks);
  f.replicas_parted = compare::replica_divergence(ranks, run);
}

// One run's buckets against the reference run's, until the first difference of each kind.
void check_collectives(const compare::RunBuckets& reference, const compare::RunBuckets& other,
                       compare::DistributedFindings& f) {
  if (!f.bucket_layout) f.bucket_layout = compare::bucket_layout_difference(reference, other);
  if (!f.collective) f.collective = compare::collective_divergence(reference, other);
}

// Rank r of each run compared with rank r of the reference run, and the replicas of each run
// checked against each other, for traces (rank 0's, from their files) of a data-parallel audit;
// none when the reference run was a single process. Runs of another world size than the
// reference's are left out of the rank comparison (compare says why in a warning). The ranks'
// traces are found beside rank 0's (rundir/rank_traces.h).
std::optional<compare::DistributedFindings> distributed_findings(
    const std::vector<trace::Trace>& run_traces, const compare::ComparisonOptions& options) {
  if (run_traces.empty() || !run_traces[0].header.distributed) return std::nullopt;
  const trace::RankPlacement& reference = *run_traces[0].header.distributed;
  compare::DistributedFindings f;
  f.world_size = reference.world_size;
  f.backend = reference.backend;
  f.nccl = reference.nccl;
  f.comm_hook = reference.comm_hook;
  std::vector<const trace::Trace*> runs;  // the runs of the reference's world size
  for (const trace::Trace& t : run_traces) {
    if (t.header.distributed && t.header.distributed->world_size == f.world_size)
      runs.push_back(&t);
  }
  for (int rank = 1; rank < f.world_size; ++rank)
    f.ranks.push_back(compare_rank(runs, rank, options));
  // Each run's ranks are read whole once: the replicas checked against each other, and the
  // buckets (small: a few digests a step) kept of the reference run only, to compare the others'
  // of its seed group with.
  compare::RunBuckets reference_buckets;
  for (const trace::Trace* t : runs) {
    const bool reference_run = t == runs.front();
    const bool same_group = t->header.seed_group == runs.front()->header.seed_group;
    if (f.replicas_parted && !reference_run && (!same_group || (f.collective && f.bucket_layout)))
      continue;  // nothing left to find in this run
    std::vector<trace::Trace> ranks;
    for (int rank = 0; rank < f.world_size; ++rank)
      ranks.push_back(trace::read_trace(rundir::rank_trace_path(t->source, rank)));
    // The run as the report numbers it: its position among the compared traces (two audits'
    // files given to compare may share a run index).
    const int run = static_cast<int>(t - run_traces.data());
    check_replicas(ranks, run, f);
    if (reference_run) {
      reference_buckets = compare::buckets_of(ranks, run);
    } else if (same_group) {
      check_collectives(reference_buckets, compare::buckets_of(ranks, run), f);
    }
  }
  return f;
}

}  // namespace

compare::ComparisonResult compare_with_snapshots(const std::vector<trace::Trace>& traces,
                                                 const AuditComparisonOptions& options,
                                                 std::vector<compare::AuditFolderCheck> folders) {
  auto ignored = std::make_shared<std::set<std::string>>();
  compare::ComparisonOptions compare_options = with_snapshots(options, traces, ignored);
  // The ranks' findings as an input of the comparison, not a patch after it (none for single
  // processes); the ranks are compared with the expectation and tolerance alone.
  compare_options.distributed = [&options](const std::vector<trace::Trace>& runs) {
    return distributed_findings(runs, options);
  };
  // What needs the run folders is an input of the comparison, never a patch after it (issue 60).
  compare_options.audit_folders = std::move(folders);
  // Two programs (--align, --expect equivalent) have no root causes to measure: compare does not
  // pair their records into any, and the alignment reads the kept outputs itself.
  if (options.measure_magnitudes && !options.align && !options.expect_equivalent) {
    compare_options.measure_magnitudes = [&options, ignored](compare::ComparisonResult& result,
                                                             const std::vector<trace::Trace>& t) {
      add_magnitudes(result, t, options, *ignored);
    };
  }
  add_kept_outputs_of_programs(compare_options, traces, *ignored);
  compare_options.ignored_snapshots = [ignored] {
    return std::vector<std::string>(ignored->begin(), ignored->end());
  };
  return compare::compare_traces(traces, compare_options);
}

compare::ComparisonResult compare_audit_folder(const std::filesystem::path& dir,
                                               const rundir::AuditManifest& manifest,
                                               const AuditComparisonOptions& options) {
  rundir::ManifestRuns runs =
      rundir::read_manifest_runs(dir, manifest, rundir::DamagedTrace::reject);
  std::vector<trace::Trace> traces = rundir::whole_runs(dir, runs);
  std::vector<compare::AuditFolderCheck> checks;
  checks.push_back(std::move(runs.check));
  return compare_with_snapshots(traces, options, std::move(checks));
}

namespace {

// A trace file named alone, with its steps left in the file. A data-parallel run is whole only
// with each rank's trace of that run beside it, as an audit folder's runs are (issue 61: a rank
// trace of another run was compared as this run's).
trace::Trace read_run_trace_file(const std::filesystem::path& file) {
  trace::Trace t = trace::read_trace_summary(file);
  if (std::string why = rundir::rank_traces_problem(t, file); !why.empty()) {
    throw InputError(file.string() + " " + why);
  }
  return t;
}

}  // namespace

compare::ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                              const AuditComparisonOptions& options) {
  std::vector<trace::Trace> traces;
  for (const auto& f : files) traces.push_back(read_run_trace_file(f));
  return compare_with_snapshots(traces, options, {});
}

// The expectation of audits whose manifests compare reads, when --expect did not say it: each
// audit decided its own (manifest `expect`), and of several the strictest applies (identity, then
// identity of fully deterministic runs, then any), so no reader passes what another fails.
void apply_expectation(const rundir::AuditManifest& m, compare::ComparisonOptions& options,
                       bool& first) {
  const std::optional<bool> e = rundir::expectation_of(m);
  if (first) {
    options.expect_identical = e;
  } else if (e == true || (!e && options.expect_identical == false)) {
    options.expect_identical = e;
  }
  first = false;
}

compare::ComparisonResult compare_inputs(const std::vector<std::filesystem::path>& inputs,
                                         const AuditComparisonOptions& given) {
  AuditComparisonOptions options = given;
  bool first_manifest = !given.expect_identical.has_value();
  const bool from_manifests = first_manifest;
  std::vector<trace::Trace> traces;
  std::vector<compare::AuditFolderCheck> folders;
  for (const std::filesystem::path& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      traces.push_back(read_run_trace_file(input));
      continue;
    }
    std::vector<trace::Trace> found;
    if (std::filesystem::exists(input / rundir::kManifestName, ec)) {
      const rundir::AuditManifest manifest = rundir::read_manifest(input);
      if (from_manifests) apply_expectation(manifest, options, first_manifest);
      rundir::ManifestRuns runs =
          rundir::read_manifest_runs(input, manifest, rundir::DamagedTrace::reject);
      found = rundir::whole_runs(input, runs);
      folders.push_back(std::move(runs.check));
    } else {
      rundir::UnvouchedTraces unvouched = rundir::traces_without_manifest(input);
      found = std::move(unvouched.traces);
      folders.push_back(std::move(unvouched.check));
    }
    for (trace::Trace& t : found) traces.push_back(std::move(t));
  }
  return compare_with_snapshots(traces, options, std::move(folders));
}

}  // namespace ra::audit
