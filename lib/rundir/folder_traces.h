#pragma once
// The traces of an audit folder (docs/trace-format.md "The audit folder"): which are the whole
// traces of its manifest's runs (compare DIR, --resume, a joining shard), the traces of a folder
// without a manifest, and where a trace's snapshots lie. What `compare DIR` reads of a folder, all
// of it without training.
#include <filesystem>
#include <optional>
#include <vector>

#include "compare/compare.h"
#include "rundir/manifest.h"
#include "trace/trace.h"

namespace ra::rundir {

// The manifest's runs as found in its folder: a run's trace is used when it is whole (it parses
// with its end record) and is of this audit (its audit id, run index, spec digest and seeds are
// the manifest's). Anything else is named: runs without such a trace as missing, trace files and
// run folders that are not of this audit as foreign.
struct ManifestRuns {
  std::vector<std::optional<trace::Trace>> traces;  // per planned run; none = missing
  compare::AuditFolderCheck check;
};
// `damaged`: what a trace under a planned run's name that does not parse is. For compare it is
// bad input (InputError naming file and line); for --resume the run is retrained (missing, with
// the reason).
enum class DamagedTrace { reject, retrain };
ManifestRuns read_manifest_runs(const std::filesystem::path& dir, const AuditManifest& manifest,
                                DamagedTrace damaged);

// The traces of a folder without a manifest (made before manifests existed): every *.trace.jsonl
// in it, sorted by name, read, with a note that no manifest vouches for them. InputError when there
// are none, or when their audit ids say they are of more than one audit.
struct UnvouchedTraces {
  std::vector<trace::Trace> traces;
  compare::AuditFolderCheck check;
};
UnvouchedTraces traces_without_manifest(const std::filesystem::path& dir);

// The manifest's runs with a whole trace of its audit, taken out of `runs` (InputError when there
// are none: nothing to compare, listing why each run is missing).
std::vector<trace::Trace> whole_runs(const std::filesystem::path& dir, ManifestRuns& runs);

// The trace files of a folder (*.trace.jsonl), sorted by name (InputError when there are none).
std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir);
// The snapshot folder of a trace file: "run-003.trace.jsonl" -> "run-003/".
std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file);

}  // namespace ra::rundir
