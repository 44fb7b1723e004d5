// Comparison of traces read from files and audit folders, with the snapshots beside them
// (`repro-audit compare`, and the report of `run`): audit/audit_compare.h.
#include "audit/audit_compare.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>

#include "audit/kept_op_replay.h"
#include "audit/kept_outputs_file.h"
#include "audit/op_replay.h"
#include "audit/predictions_file.h"
#include "audit/rank_traces.h"
#include "core/error.h"
#include "formats/safetensors.h"
#include "record/run_observers.h"
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
    sources.push_back({snapshot_dir_of(t.source), t.header.audit_id});
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
    return read_predictions_file(source, *record);
  };
  return options;
}

bool is_pytorch_trace(const trace::Trace& t) {
  return t.header.backend.starts_with("pytorch");
}

// The outputs PyTorch runs kept (audit/kept_outputs_file.h), from each one's snapshot folder;
// files not used are named in `ignored`.
void load_kept_files(const std::vector<trace::Trace>& traces, record::KeptOutputs& store,
                     std::set<std::string>& ignored) {
  for (const trace::Trace& t : traces) {
    if (!is_pytorch_trace(t) || t.source.empty()) continue;
    const std::string why =
        load_kept_outputs(snapshot_dir_of(t.source) / kKeptOutputsFileName, t.header, store);
    if (!why.empty()) ignored.insert(why);
  }
}

// The traces with the step records of their root causes' steps, which traces walked from their
// files do not hold (Trace::steps_in_source): what a magnitude's replay reads.
std::vector<trace::Trace> with_cause_steps(const std::vector<trace::Trace>& traces,
                                           const compare::ComparisonResult& result) {
  std::vector<trace::Trace> out = traces;
  for (const auto& [run, record] : result.root_cause_steps) {
    trace::Trace& t = out.at(static_cast<std::size_t>(run));
    if (t.steps_in_source) t.steps.push_back(record);
  }
  return out;
}

}  // namespace

compare::ComparisonResult compare_with_snapshots(const std::vector<trace::Trace>& traces,
                                                 const AuditComparisonOptions& options,
                                                 std::vector<compare::AuditFolderCheck> folders) {
  auto ignored = std::make_shared<std::set<std::string>>();
  compare::ComparisonResult result =
      compare::compare_traces(traces, with_snapshots(options, traces, ignored));
  result.distributed = distributed_findings(traces, options);  // none for single processes
  if (result.distributed && result.distributed->collective &&
      result.distributed->collective->inputs_identical) {
    result.suggested_trace_ops.reset();  // the collective is the cause: no op of a rank is
  }
  if (options.measure_magnitudes) {
    // PyTorch runs cannot be replayed: their own kept outputs are all there is.
    record::KeptOutputs from_files(std::numeric_limits<std::size_t>::max());
    const bool pytorch = std::any_of(traces.begin(), traces.end(), is_pytorch_trace);
    if (pytorch) load_kept_files(traces, from_files, *ignored);
    const std::vector<trace::Trace> at_causes = with_cause_steps(traces, result);
    measure_magnitudes(result, at_causes, {}, pytorch ? &from_files : options.kept_outputs);
    if (pytorch) {
      std::vector<std::string> unread;
      load_kept_replays(result, at_causes, unread);
      ignored->insert(unread.begin(), unread.end());
    }
  }
  result.audit_folders = std::move(folders);
  result.ignored_snapshots.assign(ignored->begin(), ignored->end());
  return result;
}

// The manifest's runs with a whole trace of its audit, read from the folder (InputError when
// there are none: nothing to compare).
std::vector<trace::Trace> whole_runs(const std::filesystem::path& dir, ManifestRuns& runs) {
  std::vector<trace::Trace> traces;
  for (auto& t : runs.traces) {
    if (t) traces.push_back(std::move(*t));
  }
  if (traces.empty()) {
    // One line: the log escapes a line break inside a message (apps/printable_log.h).
    std::string why;
    for (const compare::MissingRun& m : runs.check.missing_runs) {
      why += (why.empty() ? " (" : "; ") + ("run " + std::to_string(m.run) + ": " + m.reason);
    }
    throw InputError(dir.string() + ": none of the " + std::to_string(runs.check.planned_runs) +
                     " runs of audit " + runs.check.audit_id + " has a whole trace" +
                     (why.empty() ? "" : why + ")"));
  }
  return traces;
}

compare::ComparisonResult compare_audit_folder(const std::filesystem::path& dir,
                                               const AuditManifest& manifest,
                                               const AuditComparisonOptions& options) {
  ManifestRuns runs = read_manifest_runs(dir, manifest, DamagedTrace::reject);
  std::vector<trace::Trace> traces = whole_runs(dir, runs);
  std::vector<compare::AuditFolderCheck> checks;
  checks.push_back(std::move(runs.check));
  return compare_with_snapshots(traces, options, std::move(checks));
}

std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file) {
  std::string name = trace_file.filename().string();
  const std::string suffix = ".trace.jsonl";
  if (name.size() > suffix.size() && name.ends_with(suffix))
    name.resize(name.size() - suffix.size());
  return trace_file.parent_path() / name;
}

std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().ends_with(".trace.jsonl")) files.push_back(entry.path());
  }
  if (ec) throw InputError("cannot read folder " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no *.trace.jsonl files in " + dir.string());
  return files;
}

compare::ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                              const AuditComparisonOptions& options) {
  std::vector<trace::Trace> traces;
  for (const auto& f : files) traces.push_back(trace::read_trace_summary(f));
  return compare_with_snapshots(traces, options, {});
}

// The expectation of audits whose manifests compare reads, when --expect did not say it: each
// audit decided its own (manifest `expect`), and of several the strictest applies (identity, then
// identity of fully deterministic runs, then any), so no reader passes what another fails.
void apply_expectation(const AuditManifest& m, compare::ComparisonOptions& options, bool& first) {
  const std::optional<bool> e = expectation_of(m);
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
      traces.push_back(trace::read_trace_summary(input));
      continue;
    }
    std::vector<trace::Trace> found;
    if (std::filesystem::exists(input / kManifestName, ec)) {
      const AuditManifest manifest = read_manifest(input);
      if (from_manifests) apply_expectation(manifest, options, first_manifest);
      ManifestRuns runs = read_manifest_runs(input, manifest, DamagedTrace::reject);
      found = whole_runs(input, runs);
      folders.push_back(std::move(runs.check));
    } else {
      UnvouchedTraces unvouched = traces_without_manifest(input);
      found = std::move(unvouched.traces);
      folders.push_back(std::move(unvouched.check));
    }
    for (trace::Trace& t : found) traces.push_back(std::move(t));
  }
  return compare_with_snapshots(traces, options, std::move(folders));
}

}  // namespace ra::audit
