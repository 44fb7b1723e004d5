// One shard of an audit: the phases of run_audit (audit/audit.cpp) for a folder the shards share.
#include "audit/run_audit_shard.h"

#include "audit/audit_jobs.h"
#include "audit/audit_plan.h"
#include "audit/audit_run.h"
#include "core/error.h"
#include "record/fault_check.h"
#include "rundir/audit_folder.h"
#include "rundir/folder_traces.h"
#include "rundir/shard_folder_setup.h"

namespace ra::audit {

AuditResult run_audit_shard(const spec::ExperimentSpec& spec, const AuditOptions& o,
                            const AuditProgress& progress) {
  const rundir::Shard shard = *o.shard;
  const std::vector<rundir::PlannedRun> plan = plan_runs(spec, o);
  rundir::check_shard_request(shard, o.folder_use == rundir::FolderUse::overwrite,
                              !o.report_files.empty(), plan.size(), o.out_dir);
  rundir::AuditManifest requested = requested_manifest(spec, o, plan);
  requested.shards = shard.count;

  // The folder is shared: never removed on failure (another shard may be about to use it), and
  // locked in common with the other shards, this shard's own lock exclusively.
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec)
    throw InputError("cannot create output folder " + o.out_dir.string() + ": " + ec.message());
  const rundir::ShardLocks locks(o.out_dir, shard);
  rundir::ShardFolderSetup setup(o.out_dir, shard, requested, progress.notice, progress.info);
  setup.inspect();
  const train::LoadedData data = train::load_data(spec);
  if (o.fault) record::validate_fault(*o.fault, spec, *data.train);
  if (o.fault && !o.fault->op.empty() && (!o.trace_ops || !o.trace_ops->contains(o.fault->step))) {
    throw InputError("--inject-fault op=" + o.fault->op + " needs --trace-ops with step " +
                     std::to_string(o.fault->step) + " in its window");
  }
  const rundir::ShardPlan folder = setup.apply();

  AuditResult result;
  result.audit_id = folder.manifest.audit_id;
  result.trained_runs = folder.to_train;
  for (const rundir::PlannedRun& p : plan)
    result.trace_files.push_back(o.out_dir / rundir::trace_name(p.index));

  // Kept outputs live in this process only; `compare` of the folder measures by replay.
  RunWorker worker(spec, data, folder.manifest, o, progress, static_cast<int>(plan.size()));
  run_jobs(folder.to_train.size(), o.jobs,
           [&](std::size_t i) { worker.run(plan[static_cast<std::size_t>(folder.to_train[i])]); });

  ShardOutcome outcome;
  outcome.shard = shard;
  outcome.created_manifest = folder.created_manifest;
  outcome.runs = rundir::runs_of_shard(shard, static_cast<int>(plan.size()));
  outcome.already_whole = folder.already_whole;
  outcome.planned_runs = static_cast<int>(plan.size());
  const rundir::ManifestRuns now =
      rundir::read_manifest_runs(o.out_dir, folder.manifest, rundir::DamagedTrace::retrain);
  for (const compare::MissingRun& m : now.check.missing_runs) outcome.missing_runs.push_back(m.run);
  result.shard = std::move(outcome);
  return result;
}

}  // namespace ra::audit
