// One planned run of an audit, trained, recorded and written (audit/audit_run.h).
#include "audit/audit_run.h"

#include <chrono>
#include <optional>

#include "audit/audit_compare.h"
#include "audit/audit_plan.h"
#include "core/error.h"
#include "record/environment.h"
#include "record/recorder.h"
#include "record/resume_state.h"
#include "record/run_observers.h"
#include "rundir/audit_folder.h"
#include "rundir/folder_traces.h"
#include "rundir/predictions_file.h"
#include "trace/trace_io.h"
#include "train/observer_list.h"

namespace ra::audit {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Relays each step to the audit's progress callback, one call at a time over all job threads.
class ProgressRelay final : public train::Observer {
 public:
  ProgressRelay(const AuditProgress& progress, std::mutex& mutex, int run, std::int64_t total)
      : progress_(progress), mutex_(mutex), run_(run), total_(total) {}
  void on_step(const train::Trainer&, const train::StepEvent& e) override {
    if (!progress_.step) return;
    std::lock_guard lock(mutex_);
    progress_.step(run_, e, total_);
  }

 private:
  const AuditProgress& progress_;
  std::mutex& mutex_;
  int run_;
  std::int64_t total_;
};

// The seeds a planned run trains with: the manifest's.
train::RunSeeds seeds_of(const rundir::PlannedRun& p) {
  return train::RunSeeds{p.seeds.init, p.seeds.data, p.seeds.dropout, p.seeds.augment};
}

// What the run trains with, before any recorder: threads, mode, seeds, pinned algorithms, and
// for the perturbed group its flipped weight.
train::RunOptions planned_run_options(const AuditOptions& o, const rundir::PlannedRun& p) {
  train::RunOptions r;
  r.threads = o.threads;
  r.mode = o.mode;
  r.seeds = seeds_of(p);
  r.algorithm_pins = o.algorithm_pins;
  r.step_graphs = o.step_graphs;
  if (p.group == "perturbed") {
    // The flipped bit must be the group's only source of difference: deterministic kernels, and
    // the draw is the run's index, so each run of the group flips another weight.
    r.mode = spec::KernelMode::deterministic;
    r.perturb_draw = static_cast<std::uint64_t>(p.index);
  }
  return r;
}

}  // namespace

trace::TraceHeader run_header(const rundir::AuditManifest& manifest, const rundir::PlannedRun& p,
                              const train::Trainer& trainer, const AuditOptions& o) {
  trace::TraceHeader h;
  h.tool_version = o.tool_version;
  h.audit_id = manifest.audit_id;
  h.spec = manifest.spec;
  h.spec_digest = manifest.spec_digest;
  h.run_index = p.index;
  h.seed_group = p.group;
  h.seed_init = p.seeds.init;
  h.seed_data = p.seeds.data;
  h.seed_dropout = p.seeds.dropout;
  h.seed_augment = p.seeds.augment;
  h.backend = trainer.ops().name();
  h.threads = trainer.threads();
  h.determinism = determinism_json(trainer.determinism());
  h.environment = record::environment_fingerprint(trainer.threads(), trainer.ops().name());
  if (const nlohmann::json gpu = trainer.ops().device_fingerprint(); !gpu.is_null()) {
    h.environment["gpu"] = gpu;
  }
  if (o.fault && o.fault->run == p.index) h.fault = fault_json(o.fault);
  if (const auto& w = trainer.perturbation()) {
    h.perturbation = trace::Perturbation{w->tensor, w->element, w->bit, w->before, w->after};
  }
  if (o.tensor_digests) {  // a level of detail: version 4 (trace/tensor_digests.h)
    h.format_version = trace::kTraceFormatVersionWithDetail;
    h.tensor_digests = o.tensor_digests;
  }
  return h;
}

RunWorker::RunWorker(const spec::ExperimentSpec& spec, const train::LoadedData& data,
                     const rundir::AuditManifest& manifest, const AuditOptions& options,
                     const AuditProgress& progress, int planned_runs,
                     record::KeptOutputs* kept_outputs)
    : spec_(spec),
      data_(data),
      manifest_(manifest),
      options_(options),
      progress_(progress),
      planned_runs_(planned_runs),
      total_steps_(train::planned_steps(spec, *data.train)),
      kept_outputs_(kept_outputs) {}

void RunWorker::calibrate_once(const rundir::PlannedRun& p) {
  std::call_once(calibration_once_, [&] {
    // The audit's threads, mode, pins and this run's seeds; no perturbation, fault or recorder.
    train::RunOptions plain;
    plain.threads = options_.threads;
    plain.mode = options_.mode;
    plain.seeds = seeds_of(p);
    plain.algorithm_pins = options_.algorithm_pins;
    plain.step_graphs = options_.step_graphs;
    calibration_ = calibrate_step(spec_, data_, plain);
  });
}

void RunWorker::run(const rundir::PlannedRun& p) {
  calibrate_once(p);
  train::RunOptions run_options = planned_run_options(options_, p);
  // --trace-ops: the run computes through an OpRecorder, which the trainer owns.
  record::OpRecorder* op_recorder = nullptr;
  const bool faulty = options_.fault && options_.fault->run == p.index;
  if (options_.trace_ops) {
    std::optional<record::OpFault> op_fault;
    if (faulty && !options_.fault->op.empty()) {
      const record::FaultSpec& f = *options_.fault;
      const auto slash = f.op.find('/');
      op_fault =
          record::OpFault{f.step, f.op.substr(0, slash), f.op.substr(slash + 1), f.element, f.bit};
    }
    run_options.wrap_backend = [&, op_fault](backend::Ops& backend) {
      auto ops = std::make_unique<record::OpRecorder>(backend, backend.threads(), op_fault);
      if (kept_outputs_ != nullptr) ops->keep_outputs(*kept_outputs_, p.index);
      op_recorder = ops.get();
      return std::unique_ptr<backend::Ops>(std::move(ops));
    };
  }
  // Run 0 passes the interrupt steps; every other run stops at each and resumes from its file.
  const std::vector<std::int64_t> no_stops;
  if (p.index != 0 && !options_.interrupt_at.empty()) {
    run_options.interrupt_at = options_.interrupt_at.front();
  }
  auto trainer = std::make_unique<train::Trainer>(spec_, data_, run_options);
  if (trainer->ops().name() != manifest_.backend) {
    throw RuntimeFailure("run " + std::to_string(p.index) + " would train on " +
                         trainer->ops().name() + ", the audit's runs train on " +
                         manifest_.backend + " (" + options_.out_dir.string() + "/audit.json)");
  }

  const std::filesystem::path trace_file = options_.out_dir / rundir::trace_name(p.index);
  record::Recorder recorder(run_header(manifest_, p, *trainer, options_), trainer->threads(),
                            trace_file);
  if (op_recorder != nullptr) recorder.record_ops(*op_recorder, *options_.trace_ops);
  if (calibration_) recorder.calibrated(*calibration_);
  record::SnapshotWriter snapshots(rundir::snapshot_dir_of(trace_file), options_.snapshots,
                                   {{"run", std::to_string(p.index)},
                                    {"spec_digest", manifest_.spec_digest},
                                    {"audit_id", manifest_.audit_id}});
  std::optional<record::FaultInjector> injector;
  if (faulty) injector.emplace(*options_.fault);
  ProgressRelay relay(progress_, progress_mutex_, p.index, total_steps_);
  record::ResumeStateRecorder resume_states(recorder,
                                            p.index == 0 ? options_.interrupt_at : no_stops);

  train::ObserverList observers;
  if (injector) observers.add(&*injector);
  observers.add(&resume_states);
  observers.add(&recorder);
  observers.add(&snapshots);
  observers.add(&relay);
  if (progress_.run_started) {
    std::lock_guard lock(progress_mutex_);
    progress_.run_started(p.index, planned_runs_);
  }
  const train::TrainResult r = train_segments(p, trainer, observers, run_options, resume_states);
  if (faulty && !options_.fault->op.empty() && !op_recorder->fault_applied()) {
    throw InputError("--inject-fault: op " + options_.fault->op + " did not run at step " +
                     std::to_string(options_.fault->step) + " (op names: docs/trace-format.md)");
  }
  snapshots.finish(*trainer);
  if (!trainer->predictions().empty()) {
    recorder.predictions(rundir::write_predictions(trace_file, trainer->predictions()));
  }
  // The trace last: a whole trace under its name means the run's snapshots are complete too.
  recorder.finish(*trainer, r);
  if (progress_.run_finished) {
    std::lock_guard lock(progress_mutex_);
    progress_.run_finished(p.index, trace_file);
  }
}

train::TrainResult RunWorker::train_segments(const rundir::PlannedRun& p,
                                             std::unique_ptr<train::Trainer>& trainer,
                                             train::Observer& observers,
                                             const train::RunOptions& run_options,
                                             record::ResumeStateRecorder& states) {
  backend::StepLaunchCounts launches;  // each segment's trainer counts its own steps
  for (;;) {
    train::TrainResult r = trainer->run(&observers);
    launches += r.step_launches;
    if (!r.interrupted) {
      r.step_launches = std::move(launches);
      return r;
    }
    trainer = resume(p, std::move(trainer), r.position, run_options, states);
  }
}

std::unique_ptr<train::Trainer> RunWorker::resume(const rundir::PlannedRun& p,
                                                  std::unique_ptr<train::Trainer> stopped,
                                                  const train::TrainPosition& at,
                                                  train::RunOptions options,
                                                  record::ResumeStateRecorder& states) {
  const std::filesystem::path folder =
      rundir::snapshot_dir_of(options_.out_dir / rundir::trace_name(p.index));
  auto start = Clock::now();
  const train::CheckpointFiles files =
      train::write_checkpoint(train::checkpoint_stem(folder, at.step), stopped->checkpoint(at));
  const double write_seconds = seconds_since(start);
  stopped.reset();  // nothing of the stopped trainer reaches the next: it starts from the file
  report_resume_event(p.index, at.step, "checkpoint",
                      files.manifest.filename().string() + " written in " +
                          std::to_string(write_seconds * 1e3) + " ms");

  options.interrupt_at.reset();
  for (const std::int64_t step : options_.interrupt_at) {
    if (step > at.step) {
      options.interrupt_at = step;
      break;
    }
  }
  auto next = std::make_unique<train::Trainer>(spec_, data_, options);
  start = Clock::now();
  next->restore(train::read_checkpoint(files.manifest), options_.restore_skips);
  const double read_seconds = seconds_since(start);
  states.expect_resume(at.step, files.bytes, write_seconds, read_seconds);
  report_resume_event(p.index, at.step, "restore",
                      "restored in " + std::to_string(read_seconds * 1e3) + " ms");
  return next;
}

void RunWorker::report_resume_event(int run, std::int64_t step, const std::string& event,
                                    const std::string& message) {
  if (!progress_.resume_event) return;
  std::lock_guard lock(progress_mutex_);
  progress_.resume_event(run, step, event, message);
}

}  // namespace ra::audit
