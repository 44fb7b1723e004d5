#pragma once
// One planned run of an audit: train it under its seeds with the recorder, the snapshot writer,
// the fault injector (when the run is the faulty one) and a progress relay observing each step,
// then write its snapshots and, last, its trace (a whole trace under its name means the run's
// snapshots are complete too).
#include <cstdint>
#include <mutex>
#include <optional>

#include "audit/audit_options.h"
#include "audit/calibration.h"
#include "record/kept_outputs.h"
#include "record/resume_state.h"
#include "rundir/manifest.h"
#include "train/trainer.h"

namespace ra::audit {

// The trace header of a run about to train: the audit's identity (from its manifest), the run's
// seeds and what this machine and trainer will use (backend, threads, policy, environment).
trace::TraceHeader run_header(const rundir::AuditManifest& manifest, const rundir::PlannedRun& run,
                              const train::Trainer& trainer, const AuditOptions& options);

// Runs planned runs of one audit; run() may be called from several job threads at once (progress
// callbacks are serialised here).
class RunWorker {
 public:
  RunWorker(const spec::ExperimentSpec& spec, const train::LoadedData& data,
            const rundir::AuditManifest& manifest, const AuditOptions& options,
            const AuditProgress& progress, int planned_runs,
            record::KeptOutputs* kept_outputs = nullptr);
  RunWorker(const RunWorker&) = delete;
  RunWorker& operator=(const RunWorker&) = delete;

  // RuntimeFailure when the run would train on another backend than the audit's manifest says.
  void run(const rundir::PlannedRun& run);

 private:
  // An interrupted run's trainer: its state written to its checkpoint, the trainer ended, and a
  // new trainer restored from the checkpoint's files alone, set to stop at the next interrupt.
  std::unique_ptr<train::Trainer> resume(const rundir::PlannedRun& p,
                                         std::unique_ptr<train::Trainer> stopped,
                                         const train::TrainPosition& at, train::RunOptions options,
                                         record::ResumeStateRecorder& states);
  // Trains the run to its end, going on in a new trainer (`trainer` replaced) at each interrupt;
  // the result counts every segment's step launches.
  train::TrainResult train_segments(const rundir::PlannedRun& p,
                                    std::unique_ptr<train::Trainer>& trainer,
                                    train::Observer& observers,
                                    const train::RunOptions& run_options,
                                    record::ResumeStateRecorder& states);
  // The reference of the runs' recording cost (audit/calibration.h), trained by the first call.
  void calibrate_once(const rundir::PlannedRun& p);
  void report_resume_event(int run, std::int64_t step, const std::string& event,
                           const std::string& message);

  const spec::ExperimentSpec& spec_;
  const train::LoadedData& data_;
  const rundir::AuditManifest& manifest_;
  const AuditOptions& options_;
  const AuditProgress& progress_;
  int planned_runs_;
  std::int64_t total_steps_;
  record::KeptOutputs*
      kept_outputs_;  // where runs recording ops keep their nondeterministic outputs
  std::mutex progress_mutex_;
  // Trained by the first run() before its own run, alone: the other job threads wait for it.
  std::once_flag calibration_once_;
  std::optional<record::StepCalibration> calibration_;
};

}  // namespace ra::audit
