#pragma once
// Planning an audit, before anything is trained or written: the runs and their seeds, the
// manifest that names the audit (audit/audit.h, rundir/manifest.h), and the result an audit call
// starts from once its folder is prepared.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_options.h"
#include "rundir/audit_folder_setup.h"
#include "rundir/manifest.h"

namespace ra::audit {

// The planned runs: the "same" group first, then the "different" group, then (--seeds all) the
// "perturbed" group (each `runs` long, as options.seeds asks); a "different" run varies the
// streams of options.vary with derived_seed; a "perturbed" run keeps the spec's seed (its flipped
// weight is drawn when it trains: audit_run.cpp).
// InputError when --runs is below 1 or --inject-fault names a run outside the plan.
std::vector<rundir::PlannedRun> plan_runs(const spec::ExperimentSpec& spec,
                                          const AuditOptions& options);

// The audit as this call would start it: everything that decides the bits of its runs (a resumed
// audit must match it field for field). Id and creation time are left to the caller.
rundir::AuditManifest requested_manifest(const spec::ExperimentSpec& spec,
                                         const AuditOptions& options,
                                         const std::vector<rundir::PlannedRun>& plan);

// {"mode": ..., "ops": {op: mode}}: the policy as trace headers and manifests record it.
nlohmann::json determinism_json(const spec::DeterminismSpec& d);
// The fault injection as recorded (null: none).
nlohmann::json fault_json(const std::optional<record::FaultSpec>& f);

// What an audit call reports before its runs train: the folder's audit id, the runs it trains and
// every planned run's trace file (run and exec share it).
AuditResult started_result(const rundir::FolderPlan& folder,
                           const std::vector<rundir::PlannedRun>& plan,
                           const std::filesystem::path& out_dir);

// Seed of run i for a stream varied by --seeds different: a hash of (spec seed, i), stable
// across versions (part of the trace contract).
std::uint64_t derived_seed(std::uint64_t spec_seed, int run);

}  // namespace ra::audit
