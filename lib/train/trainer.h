#pragma once
// One training run of a spec: data -> model -> backend -> optimizer, step by step, with an
// observer called at fixed points so recorders can digest what happened without the trainer
// knowing about them.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/buffer.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "nn/model.h"
#include "nn/weight_perturbation.h"
#include "optim/optimizer.h"
#include "spec/resolve.h"
#include "spec/spec.h"
#include "train/train_position.h"

namespace ra::train {

struct Checkpoint;      // train/checkpoint.h
struct RestoreSkips;    // train/checkpoint.h
struct RngStreamState;  // train/checkpoint.h

// Seeds of the run's independent random streams. Normally all equal to the spec's seed; an audit
// can vary one of them and pin the rest.
struct RunSeeds {
  std::uint64_t init = 0;     // parameter initialisation
  std::uint64_t data = 0;     // sample order (shuffle)
  std::uint64_t dropout = 0;  // dropout masks
  // Data augmentation (data/augment.h); none: the data seed's (only --vary augment sets its own).
  std::optional<std::uint64_t> augment;
  static RunSeeds all(std::uint64_t seed) { return RunSeeds{seed, seed, seed, std::nullopt}; }
  std::uint64_t augment_seed() const { return augment.value_or(data); }
};

struct RunOptions {
  std::optional<int> threads;            // overrides spec.threads
  std::optional<spec::KernelMode> mode;  // replaces the spec's whole determinism policy
  std::optional<RunSeeds> seeds;         // default: RunSeeds::all(spec.seed)
  // Builds the backend for a thread count; default: by spec.device (tests inject their own).
  std::function<std::unique_ptr<backend::Ops>(int threads)> make_backend;
  // Wraps the backend in a decorator that sees every op call (record/op_recorder.h): the run then
  // computes through the decorator, which forwards to the backend; the trainer owns both.
  std::function<std::unique_ptr<backend::Ops>(backend::Ops& backend)> wrap_backend;
  // Algorithms the backend runs instead of choosing (--pin-algorithms, a replay); null: none. The
  // default backend takes them; make_backend's caller passes them itself.
  std::shared_ptr<const backend::AlgorithmPins> algorithm_pins;
  // Stop after this many steps, before the next batch is fetched (TrainResult::interrupted): where
  // a checkpoint (train/checkpoint.h) saves the run for another process to go on from.
  std::optional<std::int64_t> interrupt_at;
  // The perturbed group of an audit (--seeds all): once the model is initialised, flip the lowest
  // mantissa bit of the weight that this draw of the "perturb/weight" stream picks
  // (nn/weight_perturbation.h). Before on_start, so the initial weights record it.
  std::optional<std::uint64_t> perturb_draw;
  // Run each full training step as a CUDA graph where the backend can (run --cuda-graphs on;
  // backend/ops.h begin_step): captured once, then replayed. Off: every step eager.
  bool step_graphs = false;
};

// The train and eval sets, loaded once and shared by every run of an audit.
struct LoadedData {
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> eval;  // null when the spec has no eval set
};
LoadedData load_data(const spec::ExperimentSpec& spec);

// Batches of one epoch of `train` under the spec's batch size and drop_last.
std::int64_t batches_per_epoch(const spec::ExperimentSpec& spec, const data::Dataset& train);
// The steps Trainer::run takes: batches per epoch x epochs, capped by train.max_steps.
std::int64_t planned_steps(const spec::ExperimentSpec& spec, const data::Dataset& train);

struct EpochSummary {
  std::int64_t epoch = 0;  // 0-based
  std::int64_t steps = 0;  // steps run in this epoch
  double mean_train_loss = 0.0;
  std::optional<double> eval_loss;
  std::optional<double> eval_accuracy;
  double seconds = 0.0;
};

struct StepEvent {
  std::int64_t epoch = 0;
  std::int64_t step = 0;  // global, 0-based
  const data::Batch* batch = nullptr;
  float loss = 0.0f;
  // Wall time of the step (batch fetch excluded) until its work is done: the trainer waits for the
  // backend (Ops::synchronize) before it stops the clock.
  double seconds = 0.0;
  // The chunk digests of every gradient, updated weight and optimizer state, taken by the fused
  // update (optim/rules/update_digests.h) when an observer asked for them, the backend could fuse
  // them and no after_update hook changed the parameters since; else null.
  const optim::UpdateDigests* update_digests = nullptr;
};

class Trainer;

// Hooks called by Trainer::run on the training thread, in this order: on_start once (parameters
// initialised), then per step on_step (after the update: gradients of the step and the updated
// weights are both readable through the trainer), on_epoch after each epoch's evaluation.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_start(const Trainer&) {}
  // Mutating hooks, for test-only fault injection (a perturbed batch, a flipped weight bit):
  // before_step sees the batch before the forward pass, after_update the parameters right after
  // the optimizer step (before on_step records them); after_update returns true when it changed
  // them (the update's digests are then stale).
  virtual void before_step(data::Batch&, std::int64_t /*step*/) {}
  virtual bool after_update(nn::Model&, std::int64_t /*step*/) { return false; }
  // True when on_step wants StepEvent::update_digests: the optimizer update then digests what it
  // writes, while it is in cache.
  virtual bool wants_update_digests() const { return false; }
  virtual void on_step(const Trainer&, const StepEvent&) {}
  virtual void on_epoch(const Trainer&, const EpochSummary&) {}
  // When run() returns, interrupted or at its end (not when it throws): the last hook that sees
  // this trainer's backend before a resumed run may replace it.
  virtual void on_run_end(const Trainer&) {}
};

struct TrainResult {
  std::int64_t steps = 0;
  float final_loss = 0.0f;  // training loss of the last step
  std::vector<EpochSummary> epochs;
  double median_step_seconds = 0.0;
  double total_seconds = 0.0;
  bool interrupted = false;  // stopped at RunOptions::interrupt_at
  TrainPosition position;    // where it stopped: after its last step
  // How this run's steps were launched (backend/step_launch.h): eager, captured or replayed as
  // a CUDA graph, and why each eager one was.
  backend::StepLaunchCounts step_launches;
};

class Trainer {
 public:
  // Builds the backend, the model (initialised) and the optimizer. Throws RuntimeFailure when
  // the spec asks for a device this build cannot use.
  Trainer(const spec::ExperimentSpec& spec, LoadedData data, const RunOptions& options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains from the start, or from the position restore() set, to the end or the interrupt.
  TrainResult run(Observer* observer = nullptr);

  // Puts a checkpoint's state into this trainer before run() (train/trainer_checkpoint.cpp):
  // weights, optimizer state and steps, each random stream's counter, the position. InputError
  // when the checkpoint is of another spec, or its streams' keys or data order are not this run's.
  void restore(const Checkpoint& checkpoint, const RestoreSkips& skips);
  // The run's state at `position` (after run() stopped there), tensors copied to the host.
  Checkpoint checkpoint(const TrainPosition& position) const;
  // Where the run stands: the position before the step in progress (the start before run()).
  const TrainPosition& position() const noexcept { return position_; }
  // Every named random stream a step draws from, as it stands at `position`: "data/order", then
  // "dropout/<layer>" in layer order.
  std::vector<RngStreamState> rng_streams(const TrainPosition& position) const;

  const spec::ExperimentSpec& spec() const noexcept { return spec_; }
  const spec::ResolvedModel& resolved() const noexcept { return model_->resolved(); }
  const nn::Model& model() const noexcept { return *model_; }
  const optim::Optimizer& optimizer() const noexcept { return *optimizer_; }
  bool step_graphs() const noexcept { return step_graphs_; }  // RunOptions::step_graphs
  const backend::Ops& ops() const noexcept { return *ops_; }
  const RunSeeds& seeds() const noexcept { return seeds_; }
  const spec::DeterminismSpec& determinism() const noexcept { return determinism_; }
  int threads() const noexcept { return threads_; }
  // The flipped weight (RunOptions::perturb_draw); none in an unperturbed run.
  const std::optional<nn::WeightPerturbation>& perturbation() const noexcept {
    return perturbation_;
  }
  // The predicted class (arg-max, the first maximum on ties) of every eval sample, in the eval
  // set's order, at the last evaluation; empty before one or without an eval set.
  const std::vector<std::int32_t>& predictions() const noexcept { return predictions_; }
  // Non-empty when the spec said device "auto" and no GPU was usable (the run is on the CPU).
  const std::string& backend_notice() const noexcept { return backend_notice_; }

  // Digests of tensors in the backend's memory, computed by the backend (on the device for a
  // device backend).
  std::vector<Digest128> backend_digests(const std::vector<const Tensor*>& tensors) const {
    return ops_->digest(tensors);
  }
  // The same digests, of the tensors as they are now, stored into `*out` by the backend's next
  // synchronize (Ops::digest_when_done): at the end of the next step, or at settle_backend().
  void backend_digests_when_done(const std::vector<const Tensor*>& tensors,
                                 std::shared_ptr<std::vector<Digest128>> out) const {
    ops_->digest_when_done(tensors, std::move(out));
  }
  // Waits for the backend's queued work and stores what its *_when_done calls promised.
  void settle_backend() const { ops_->synchronize(); }

  // Loss and accuracy of the current weights on a data set (no dropout, no update).
  struct Evaluation {
    double loss = 0.0;
    double accuracy = 0.0;
    std::vector<std::int32_t> predicted;  // per sample, in the set's order
  };
  Evaluation evaluate(const data::Dataset& set);

 private:
  // InputError when the checkpoint's position does not add up (trainer_checkpoint.cpp).
  void check_position(const Checkpoint& checkpoint) const;
  // A batch where the backend reads it: the batch itself on a host backend, else uploaded copies.
  struct Staged {
    const Tensor& images;
    std::span<const std::int32_t> labels;
  };
  Staged stage(const data::Batch& batch);
  struct RunState;
  // One epoch's steps from position_; false when the run stopped (max_steps or the interrupt).
  bool run_epoch(data::BatchLoader& loader, RunState& state, Observer* observer);
  // One step's work, queued as the backend says (Ops::begin_step) and run again where it did
  // not run (a failed capture); returns its loss once the backend has synchronized.
  float train_step(const Staged& in, const nn::StepContext& ctx, RunState& state);

  spec::ExperimentSpec spec_;
  LoadedData data_;
  RunSeeds seeds_;
  spec::DeterminismSpec determinism_;
  int threads_ = 1;
  std::string backend_notice_;
  std::unique_ptr<backend::Ops> backend_;  // the backend that computes
  std::unique_ptr<backend::Ops> ops_;      // what the run calls: backend_, or a decorator of it
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<nn::WeightPerturbation> perturbation_;
  std::vector<std::int32_t> predictions_;
  optim::UpdateDigests update_digests_;  // filled by the optimizer step when an observer asks
  Tensor staged_images_;
  Buffer<std::int32_t> staged_labels_;
  TrainPosition position_;
  std::optional<std::int64_t> interrupt_at_;
  bool step_graphs_ = false;
  // What each stream's counter is behind the run's position: 0 unless a test-only restore fault
  // left the counters of a restored run at 0 (its streams then draw from the start again).
  std::uint64_t dropout_counter_lag_ = 0;
  std::int64_t order_counter_lag_ = 0;
  // How far the loader's batch is behind the run's in the restored epoch: 0 unless a test-only
  // restore fault started the sampler again from the epoch's beginning.
  std::int64_t loader_batch_lag_ = 0;
};

}  // namespace ra::train
