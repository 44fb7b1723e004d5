// run_audit: the phases of an audit in order. Each lives in its own file:
//   audit_plan.cpp          the planned runs, their seeds, the requested manifest
//   rundir/audit_folder_setup.cpp  the output folder: created, locked, inspected, prepared (or
//                           resumed)
//   audit_run.cpp           one run: trained, recorded, its snapshots and trace written
//   audit_jobs.cpp          the runs K at a time (--jobs)
//   deterministic_autotune.cpp  on a GPU in deterministic mode: run 0 tunes, the others pin
//   audit_compare.cpp       the report, from the folder through its manifest
//   run_audit_shard.cpp     one shard's share of the runs, in a folder the shards share
#include "audit/audit.h"

#include "audit/audit_compare.h"
#include "audit/audit_jobs.h"
#include "audit/audit_plan.h"
#include "audit/audit_run.h"
#include "audit/deterministic_autotune.h"
#include "audit/run_audit_shard.h"
#include "core/error.h"
#include "record/fault_check.h"
#include "rundir/algorithm_file.h"
#include "rundir/audit_folder_setup.h"

namespace ra::audit {
namespace {

// Enough for the nondeterministic outputs of the first steps of the Keras MNIST convnet (about
// 35 MiB a step at batch 128), where races first show.
constexpr std::size_t kKeptOutputBytesPerRun = std::size_t(128) << 20;

// --interrupt-at: steps after which a run can stop and go on (1 to the run's last but one), for an
// audit that has a run to interrupt besides run 0.
void validate_interrupts(const AuditOptions& o, const spec::ExperimentSpec& spec,
                         const data::Dataset& train) {
  if (o.interrupt_at.empty()) {
    if (o.restore_skips.any()) throw InputError("--test-skip-restore needs --interrupt-at");
    return;
  }
  const std::int64_t steps = train::planned_steps(spec, train);
  for (const std::int64_t step : o.interrupt_at) {
    if (step < 1 || step >= steps) {
      throw InputError("--interrupt-at " + std::to_string(step) + ": a run of " +
                       std::to_string(steps) + " steps can stop after step 1 to " +
                       std::to_string(steps - 1));
    }
  }
  if (o.runs < 2)
    throw InputError("--interrupt-at needs --runs 2 or more (run 0 is not interrupted)");
  if (o.trace_ops) throw InputError("--interrupt-at and --trace-ops cannot be combined yet");
}

// What training the folder's missing runs needs.
struct RunsToTrain {
  const spec::ExperimentSpec& spec;
  const train::LoadedData& data;
  const rundir::FolderPlan& folder;
  const std::vector<rundir::PlannedRun>& plan;
  const AuditOptions& options;
  const AuditProgress& progress;
};

// Trains the runs the folder lacks, --jobs at a time. With deterministic autotune
// (audit/deterministic_autotune.h) run 0 trains first, alone, timing the deterministic
// candidates; its choices are saved in the folder (a resumed audit's run 0 too) and every other
// run is pinned to them.
void train_runs(const RunsToTrain& r, const std::filesystem::path& run0_trace,
                record::KeptOutputs* kept) {
  const int planned = static_cast<int>(r.plan.size());
  std::vector<int> to_train = r.folder.to_train;
  AuditOptions pinned = r.options;
  if (uses_deterministic_autotune(r.spec, r.options, r.folder.manifest.backend)) {
    if (!to_train.empty() && to_train.front() == 0) {
      AuditOptions tuning = r.options;
      tuning.algorithm_pins = tuning_pins();
      RunWorker(r.spec, r.data, r.folder.manifest, tuning, r.progress, planned, kept)
          .run(r.plan[0]);
      to_train.erase(to_train.begin());
    }
    pinned.algorithm_pins = save_tuned_pins(run0_trace, r.options.out_dir);
  }
  RunWorker worker(r.spec, r.data, r.folder.manifest, pinned, r.progress, planned, kept);
  run_jobs(to_train.size(), r.options.jobs,
           [&](std::size_t i) { worker.run(r.plan[static_cast<std::size_t>(to_train[i])]); });
}

}  // namespace

// derived_seed: audit/audit_plan.cpp; compare_inputs,
// compare_trace_files: audit/audit_compare.cpp; trace_files_in, snapshot_dir_of:
// rundir/folder_traces.cpp.

AuditResult run_audit(const spec::ExperimentSpec& spec, const AuditOptions& o,
                      const AuditProgress& progress) {
  if (o.shard) return run_audit_shard(spec, o, progress);
  const std::vector<rundir::PlannedRun> plan = plan_runs(spec, o);

  // The folder: locked before it is looked at (a second audit fails here, at once), refused or
  // prepared before the data is loaded, its manifest written before the first run trains.
  const rundir::OutputFolder out_folder(o.out_dir);
  const rundir::FolderLock folder_lock(o.out_dir);
  rundir::AuditFolderSetup setup(o.out_dir, o.folder_use, o.report_files,
                                 requested_manifest(spec, o, plan), progress.notice);
  setup.inspect();
  const train::LoadedData data = train::load_data(spec);
  if (o.fault) record::validate_fault(*o.fault, spec, *data.train);  // before any run: it must fire
  validate_interrupts(o, spec, *data.train);
  // An op fault is applied where the op is recorded: its step must be in the window.
  if (o.fault && !o.fault->op.empty() && (!o.trace_ops || !o.trace_ops->contains(o.fault->step))) {
    throw InputError("--inject-fault op=" + o.fault->op + " needs --trace-ops with step " +
                     std::to_string(o.fault->step) + " in its window");
  }
  const rundir::FolderPlan folder = setup.apply();
  const rundir::NewManifestGuard manifest_guard(o.out_dir, folder.new_audit);

  AuditResult result = started_result(folder, plan, o.out_dir);

  // Runs recording ops keep the outputs of their nondeterministic ops, for the magnitude of a
  // root cause that a replay could not reproduce (record/kept_outputs.h).
  record::KeptOutputs kept(kKeptOutputBytesPerRun);
  train_runs({spec, data, folder, plan, o, progress}, result.trace_files[0],
             o.trace_ops && o.measure_magnitudes ? &kept : nullptr);

  // The algorithms run 0 ran (--save-algorithms), from its trace: a resumed audit's run 0 too.
  if (!o.save_algorithms.empty()) {
    rundir::write_algorithm_file(o.save_algorithms,
                                 rundir::read_algorithm_file(result.trace_files[0]));
  }
  // The report is made from the folder, through the manifest, exactly as `compare DIR` makes it:
  // resumed and newly trained runs alike, and nothing of another audit.
  AuditComparisonOptions compare_options;
  // The audit's expectation, as compare's.
  compare_options.expect_identical = rundir::expectation_of(folder.manifest);
  compare_options.loss_tolerance = o.loss_tolerance;
  compare_options.allow_empty = o.allow_empty;
  compare_options.rerun_command = o.rerun_command;
  compare_options.measure_magnitudes = o.measure_magnitudes;
  compare_options.kept_outputs = &kept;
  result.comparison = compare_audit_folder(o.out_dir, folder.manifest, compare_options);
  return result;
}

}  // namespace ra::audit
