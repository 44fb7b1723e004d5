#pragma once
// An audit: N training runs of one spec under controlled seeds, each recorded into a trace file
// (written atomically as soon as its run ends, so an interrupted audit keeps every finished run),
// then compared. The folder holds one audit: its manifest (audit.json) names the audit and its
// planned runs, every trace and snapshot carries the audit id, and a lock keeps a second audit
// out while one runs (rundir/manifest.h, rundir/audit_folder.h).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "audit/audit_compare.h"
#include "audit/audit_options.h"
#include "audit/audit_plan.h"
#include "compare/compare.h"
#include "spec/spec.h"

// compare_inputs, compare_trace_files: audit/audit_compare.h; derived_seed: audit/audit_plan.h;
// trace_files_in, snapshot_dir_of: rundir/folder_traces.h. The phases include those, never this
// facade (scripts/check-layering).
namespace ra::audit {

// InputError (exit 2) when the folder is locked by another audit, holds another audit (fresh), or
// holds an audit other than the one requested (resume: the message lists what differs). With
// options.shard: the shard creates the folder's manifest or joins the audit of the one there (the
// same plan for the same number of shards, else InputError listing what differs), trains those of
// its runs that have no whole trace yet, and makes no report.
AuditResult run_audit(const spec::ExperimentSpec& spec, const AuditOptions& options,
                      const AuditProgress& progress = {});

}  // namespace ra::audit
