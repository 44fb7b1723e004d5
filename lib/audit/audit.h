#pragma once
// An audit: N training runs of one spec under controlled seeds, each recorded into a trace file
// (written atomically as soon as its run ends, so an interrupted audit keeps every finished run),
// then compared. The folder holds one audit: its manifest (audit.json) names the audit and its
// planned runs, every trace and snapshot carries the audit id, and a lock keeps a second audit
// out while one runs (audit/manifest.h, audit/audit_folder.h).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "audit/audit_options.h"
#include "compare/compare.h"
#include "spec/spec.h"

namespace ra::audit {

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
compare::ComparisonResult compare_inputs(const std::vector<std::filesystem::path>& inputs,
                                         const AuditComparisonOptions& options);
// Compares trace files given by name (and the snapshots beside them).
compare::ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                              const AuditComparisonOptions& options);
// The trace files of a folder (*.trace.jsonl), sorted by name.
std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir);
// The snapshot folder of a trace file: "run-003.trace.jsonl" -> "run-003/".
std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file);

}  // namespace ra::audit
