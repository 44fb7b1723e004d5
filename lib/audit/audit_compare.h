#pragma once
// Comparison of traces read from files and audit folders, with the snapshots beside them: what
// `repro-audit compare` does (audit/audit.h compare_inputs) and how `run` makes its report, from
// the folder through its manifest, exactly as `compare DIR` would. What is read of a folder
// (manifest, whole runs, side files) is lib/rundir's and needs no training; the comparison is
// lib/compare's; the one step here that may train is the magnitude of op root causes, measured by
// a replay (audit/op_replay.h) only with options.measure_magnitudes.
#include <filesystem>
#include <vector>

#include "audit/audit_options.h"
#include "rundir/folder_traces.h"
#include "rundir/manifest.h"

namespace ra::audit {

// compare_traces with the snapshots beside each trace (snapshot_dir_of its source), counted only
// when they carry the trace's audit id: a stale file of another audit is named in the result's
// ignored_snapshots, never measured. With options.measure_magnitudes, each op root cause's
// magnitude is measured by a replay (audit/op_replay.h). `folders` goes to the result's
// audit_folders.
compare::ComparisonResult compare_with_snapshots(const std::vector<trace::Trace>& traces,
                                                 const AuditComparisonOptions& options,
                                                 std::vector<compare::AuditFolderCheck> folders);

// The report of an audit folder: its manifest's whole runs, compared with their snapshots.
compare::ComparisonResult compare_audit_folder(const std::filesystem::path& dir,
                                               const rundir::AuditManifest& manifest,
                                               const AuditComparisonOptions& options);

// What `repro-audit compare` does. A folder with a manifest contributes exactly the manifest's
// runs that have a whole trace of its audit, and names missing runs and foreign files in the
// result's audit_folders; a folder without one (written before manifests) every *.trace.jsonl in
// it, with a note that nothing vouches for them; a file itself (traces from anywhere). Snapshots
// beside a trace are used only when they carry the trace's audit id.
compare::ComparisonResult compare_inputs(const std::vector<std::filesystem::path>& inputs,
                                         const AuditComparisonOptions& options);
// Compares trace files given by name (and the snapshots beside them).
compare::ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                              const AuditComparisonOptions& options);

}  // namespace ra::audit
