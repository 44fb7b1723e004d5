#pragma once
// Records one run into its trace file while it trains: the initial parameters' digests, then per
// step the batch, the loss bits, every gradient, every updated weight and the optimizer state.
// Each record is written when it is complete (trace/trace_file_writer.h): the cost of a step and
// the memory held do not grow with the run's length.
//
// On a device backend a step's tensors are hashed where they are, queued after the step
// (Ops::digest_when_done), with no wait of their own: the device hashes while the host writes the
// previous step's record and fetches the next batch (whose upload, from pageable memory, waits for
// the stream), and the record is written one step late, when the next step's end has waited for
// the device anyway. Before
// anything else is written (an epoch, a resume point, the end record) and when the trainer's run
// returns, the recorder waits for the step still pending, so the file keeps the run's order.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/thread_pool.h"
#include "record/op_recorder.h"
#include "record/step_clock.h"
#include "trace/trace.h"
#include "trace/trace_file_writer.h"
#include "train/trainer.h"

namespace ra::record {

// A recorded step whose device tensors' digests the backend has yet to store
// (Ops::digest_when_done): the recorder's, between a step and the next (at namespace scope, so
// that std::optional sees it complete).
struct PendingStep {
  trace::StepRecord record;
  std::size_t params = 0, buffers = 0;
  // The step's digests in order: batch inputs, gradients, weights, buffers, optimizer state; the
  // host tensors' filled at once, the rest from `device` when it is in.
  std::vector<Digest128> all;
  std::vector<std::size_t> device_slots;  // in `all`, of each of `device`
  // The backend's, by its next synchronize(); shared with it until then.
  std::shared_ptr<std::vector<Digest128>> device = std::make_shared<std::vector<Digest128>>();
};

class Recorder final : public train::Observer {
 public:
  // `header` carries what the caller knows (run index, seeds, environment, spec); the recorder
  // fills in the parameter and optimizer-state names. `digest_threads` parallelises the digests
  // over tensors (they are independent), which keeps recording cheap next to a step. The trace
  // goes to `trace_file`, whole when finish() returns; a run that ends otherwise leaves its
  // partial temporary beside it. Without a file (an empty path: tests, a caller that wants the
  // steps in memory) the steps are kept and finish() returns them.
  Recorder(trace::TraceHeader header, int digest_threads, std::filesystem::path trace_file = {});

  // With --trace-ops: the steps in `window` also get the op records of `ops`, the decorator the
  // run computes through (the trace is then format version 2). Call before the run starts.
  void record_ops(OpRecorder& ops, const trace::OpWindow& window);

  // A restored trainer (one that starts after step 0: a resumed run's next segment) only hands
  // over its optimizer's state: the trace goes on with the run's first trainer's records.
  void on_start(const train::Trainer& trainer) override;
  // Starts the op records of the step (its batch is the first).
  void before_step(data::Batch& batch, std::int64_t step) override;
  void on_step(const train::Trainer& trainer, const train::StepEvent& event) override;
  void on_epoch(const train::Trainer& trainer, const train::EpochSummary& summary) override;
  // Writes the step still pending: its trainer may go (a resumed run's next segment).
  void on_run_end(const train::Trainer& trainer) override;
  // The update digests the gradients, weights and optimizer state while they are in cache, on
  // backends that can (optim/rules/update_digests.h); the recorder combines its chunk digests.
  bool wants_update_digests() const override { return true; }

  // A resume record (record/resume_state.h), before the step it describes; `trainer` is the one
  // about to run that step.
  void resume_point(const train::Trainer& trainer, const trace::ResumePoint& point);

  // The median step of a few steps trained with recording off (audit/calibration.h): finish()
  // then records what recording cost, measured (trace::RecordingCost). Without it the trace
  // holds only the recorder's summed time (recording_seconds).
  void calibrated(const StepCalibration& calibration) { calibration_ = calibration; }

  // The run's predicted classes of the eval set, written beside the trace by the caller
  // (rundir/predictions_file.h): recorded in the end record.
  void predictions(trace::PredictionsRecord record) { predictions_ = std::move(record); }
  // Completes the trace with the run's result and puts it under its name; the recorder is spent
  // afterwards. Returns the trace, without its steps when they went to a file.
  trace::Trace finish(const train::Trainer& trainer, const train::TrainResult& result);

 private:
  // Digests of the given tensors, in order: host tensors in parallel on the recorder's threads,
  // device tensors by the backend.
  std::vector<Digest128> digest_all(const train::Trainer& trainer,
                                    const std::vector<const Tensor*>& tensors);

  // Opens the trace file at the first step: the optimizer's state names are known by then.
  void start_file();

  // The step's digests, on the host now and on the backend queued: into pending_, written now
  // when no tensor is on the backend.
  void queue_step_digests(const train::Trainer& trainer, const train::StepEvent& e,
                          trace::StepRecord r);
  // Writes the pending step, whose backend has synchronized since it was queued.
  void write_pending();
  // Waits for `trainer`'s backend, then writes the pending step (if any).
  void settle_pending(const train::Trainer& trainer);
  // The level of detail, then the file (or the kept steps).
  void write_step(trace::StepRecord r);

  trace::Trace trace_;  // all but the steps, which only a recorder without a file keeps
  std::optional<trace::TraceFileWriter> file_;
  OpRecorder* ops_ = nullptr;  // set by record_ops
  double counted_op_seconds_ = 0.0;
  ThreadPool pool_;
  double recording_seconds_ = 0.0;
  // The optimizer's state tensors in state() order, listed at the first step.
  std::vector<const Tensor*> state_;
  bool state_listed_ = false;
  // The fused digests' hashing time already counted (UpdateDigests::hash_nanoseconds).
  std::int64_t counted_hash_nanoseconds_ = 0;
  // Every step's time, over all trainers of a resumed run: the end record's median.
  std::vector<double> step_seconds_;
  std::optional<trace::PredictionsRecord> predictions_;
  StepClock clock_;  // every step's start, over all trainers of a resumed run
  std::optional<StepCalibration> calibration_;
  std::optional<PendingStep> pending_;
};

}  // namespace ra::record
