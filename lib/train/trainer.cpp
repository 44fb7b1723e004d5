#include "train/trainer.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/statistics.h"
#include "core/thread_pool.h"
#include "nn/loss.h"
#include "rng/stream.h"
#include "spec/memory_plan.h"
#include "spec/resolve.h"
#include "train/backend_choice.h"
#include "train/memory_check.h"

namespace ra::train {
namespace {

using Clock = std::chrono::steady_clock;

// The name the loss is announced under (Ops::enter_layer); a constant: steps allocate nothing.
const std::string kLossLayer = "loss";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

LoadedData load_data(const spec::ExperimentSpec& spec) {
  // Synthetic sets' sizes are known from the spec: check the memory before generating them.
  const auto train_known = spec::samples_used(spec.data.train);
  const auto eval_known =
      spec.data.eval ? spec::samples_used(*spec.data.eval) : std::optional<std::int64_t>(0);
  const std::uint64_t available = available_memory_bytes();
  if (train_known && eval_known) check_memory(spec, *train_known, *eval_known, available);

  LoadedData loaded;
  loaded.train = std::make_shared<const data::Dataset>(
      data::load_dataset(spec.data.train, spec.data.scale, "train", spec.model.input));
  if (spec.data.eval) {
    loaded.eval = std::make_shared<const data::Dataset>(
        data::load_dataset(*spec.data.eval, spec.data.scale, "eval", spec.model.input));
  }
  // Shapes of idx files are only known now: check them against the model.
  for (const auto* set : {loaded.train.get(), loaded.eval.get()}) {
    if (set == nullptr) continue;
    if (set->sample_shape != spec.model.input) {
      throw InputError("data." + set->role + ": samples have shape " +
                       to_string(set->sample_shape) + " but model.input is " +
                       to_string(spec.model.input));
    }
  }
  // ... and so are their sizes (the steps of a run and their records follow from them).
  if (!train_known || !eval_known) {
    check_memory(spec, loaded.train->size(), loaded.eval ? loaded.eval->size() : 0, available);
  }
  // Labels against the width of the model's output, by sample and file (idx sets may hold
  // labels the model has no output for; synthetic sets are validated with the spec).
  const spec::ResolvedModel model = spec::resolve_model(spec.model);
  if (model.output.size() == 1) {
    for (const auto* set : {loaded.train.get(), loaded.eval.get()}) {
      if (set != nullptr) data::check_labels(*set, static_cast<int>(model.output[0]));
    }
  }
  return loaded;
}

std::int64_t batches_per_epoch(const spec::ExperimentSpec& spec, const data::Dataset& train) {
  return data::BatchLoader(train, spec.data.batch_size, false, spec.data.drop_last, {}, 0)
      .batches_per_epoch();
}

std::int64_t planned_steps(const spec::ExperimentSpec& spec, const data::Dataset& train) {
  const std::int64_t total = batches_per_epoch(spec, train) * spec.train.epochs;
  return spec.train.max_steps > 0 ? std::min(total, spec.train.max_steps) : total;
}

Trainer::Trainer(const spec::ExperimentSpec& spec, LoadedData data, const RunOptions& options)
    : spec_(spec), data_(std::move(data)) {
  if (!data_.train) throw std::logic_error("Trainer needs a training set");
  seeds_ = options.seeds.value_or(RunSeeds::all(spec_.seed));
  determinism_ = spec_.determinism;
  if (options.mode) determinism_ = spec::DeterminismSpec{*options.mode, {}};
  threads_ = options.threads.value_or(spec_.threads);
  interrupt_at_ = options.interrupt_at;
  step_graphs_ = options.step_graphs;
  if (threads_ <= 0) threads_ = hardware_threads();
  if (options.make_backend) {
    backend_ = options.make_backend(threads_);
  } else {
    BackendChoice choice =
        make_backend(spec_.device, threads_, determinism_.mode, options.algorithm_pins);
    backend_ = std::move(choice.ops);
    backend_notice_ = std::move(choice.notice);
  }
  if (options.wrap_backend) {
    ops_ = options.wrap_backend(*backend_);
  } else {
    ops_ = std::move(backend_);
  }
  model_ = std::make_unique<nn::Model>(spec::resolve_model(spec_.model),
                                       nn::ModelSeeds{seeds_.init, seeds_.dropout}, ops_->memory());
  if (options.perturb_draw) {
    perturbation_ = nn::perturb_one_weight(*model_, seeds_.init, *options.perturb_draw);
  }
  staged_images_ = Tensor(Shape{0}, ops_->memory());
  staged_labels_ = Buffer<std::int32_t>(ops_->memory());
  optimizer_ = optim::make_optimizer(spec_.optimizer);
  // Every backend applies the updates (the CPU one on its threads, vectorised), so that they
  // run where the parameters are and `bench` times them as an op.
  // Each update is announced under its parameter's name (Ops::enter_layer).
  std::vector<std::pair<const float*, std::string>> param_names;
  for (const nn::Param* p : model_->params()) param_names.emplace_back(p->value.data(), p->name);
  optimizer_->set_device_update([ops = ops_.get(), names = std::move(param_names)](
                                    const optim::UpdateRule& rule, std::int64_t n, float* value,
                                    const float* grad, float* s0, float* s1,
                                    const optim::ChunkDigestTargets* digests) {
    for (const auto& [param_data, name] : names) {
      if (param_data == value) ops->enter_layer(name);
    }
    if (digests != nullptr &&
        ops->optimizer_update_digested(rule, n, value, grad, s0, s1, *digests)) {
      return true;
    }
    ops->optimizer_update(rule, n, value, grad, s0, s1);
    return false;
  });
}

Trainer::~Trainer() = default;

Trainer::Staged Trainer::stage(const data::Batch& batch) {
  if (ops_->memory().host_accessible()) return Staged{batch.images, batch.labels};
  // A device backend: one upload of the batch per step, into buffers reused between steps.
  staged_images_.resize(batch.images.shape());
  staged_images_.copy_from(batch.images);
  staged_labels_.assign_from_host(batch.labels.data(), batch.labels.size());
  return Staged{staged_images_, {staged_labels_.data(), staged_labels_.size()}};
}

Trainer::Evaluation Trainer::evaluate(const data::Dataset& set) {
  data::BatchLoader loader(set, spec_.data.batch_size, /*shuffle=*/false, /*drop_last=*/false,
                           rng::PhiloxKey{}, /*workers=*/0);
  loader.start_epoch(0);
  nn::StepContext ctx{/*training=*/false, 0, &determinism_};
  data::Batch batch;
  double loss_sum = 0.0;
  std::int64_t correct = 0, seen = 0;
  Evaluation e;
  e.predicted.reserve(static_cast<std::size_t>(set.size()));
  while (loader.next(batch)) {
    const Staged in = stage(batch);
    const Tensor& out = model_->forward(*ops_, in.images, ctx);
    const float loss = nn::compute_loss(*ops_, spec_.loss, out, in.labels, nullptr,
                                        determinism_.mode_for(spec::ReducingOp::loss));
    // Batch means weighted by batch size, summed in batch order: the set's mean loss.
    loss_sum += static_cast<double>(loss) * batch.size();
    // Metrics are computed on the host: a download of the [N, classes] output on a device.
    const std::size_t first = e.predicted.size();
    e.predicted.resize(first + batch.labels.size());
    const std::span<std::int32_t> predicted(e.predicted.data() + first, batch.labels.size());
    correct += out.on_host() ? nn::predict_classes(out, batch.labels, predicted)
                             : nn::predict_classes(out.to_host(), batch.labels, predicted);
    seen += batch.size();
  }
  if (seen > 0) {
    e.loss = loss_sum / static_cast<double>(seen);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(seen);
  }
  return e;
}

// What run() and run_epoch() share.
struct Trainer::RunState {
  std::vector<optim::Parameter> params;
  optim::UpdateDigests* digests = nullptr;
  TrainResult result;
  std::vector<double> step_seconds;
  data::Batch batch;
  Tensor output_grad;
};

TrainResult Trainer::run(Observer* observer) {
  const auto run_start = Clock::now();
  data::BatchLoader loader(*data_.train, spec_.data.batch_size, spec_.data.shuffle,
                           spec_.data.drop_last,
                           rng::derive_key(seeds_.data, rng::kDataOrderStream), spec_.data.workers);
  if (spec_.data.augment.active()) {
    const spec::AugmentSpec& a = spec_.data.augment;
    loader.set_augmentation(
        {a.shift, a.flip, rng::derive_key(seeds_.augment_seed(), rng::kDataAugmentStream),
         a.width_shift_range, a.height_shift_range, a.fill_mode == spec::FillMode::nearest});
  }
  RunState state{{}, nullptr, {}, {}, {}, Tensor(Shape{0}, ops_->memory())};
  for (nn::Param* p : model_->params()) state.params.push_back({p->name, &p->value, &p->grad});

  if (observer) observer->on_start(*this);
  // Asked for once: the fused update's digests, reused every step.
  if (observer && observer->wants_update_digests()) state.digests = &update_digests_;
  state.result.steps = position_.step;
  state.result.final_loss = position_.last_loss;
  // Reserved: no allocation inside the step loop.
  state.step_seconds.reserve(
      static_cast<std::size_t>(std::max<std::int64_t>(0, planned_steps(spec_, *data_.train))));
  for (; position_.epoch < spec_.train.epochs; ++position_.epoch) {
    const auto epoch_start = Clock::now();
    // The epoch's order is drawn with the data stream's counter: the epoch, unless a test-only
    // restore fault left it behind.
    loader.start_epoch(position_.epoch - order_counter_lag_, position_.batch - loader_batch_lag_);
    loader_batch_lag_ = 0;
    if (!run_epoch(loader, state, observer)) break;
    EpochSummary summary;
    summary.epoch = position_.epoch;
    summary.steps = position_.epoch_steps;
    summary.mean_train_loss =
        summary.steps ? position_.epoch_loss_sum / static_cast<double>(summary.steps) : 0.0;
    if (data_.eval) {
      Evaluation e = evaluate(*data_.eval);
      summary.eval_loss = e.loss;
      summary.eval_accuracy = e.accuracy;
      predictions_ = std::move(e.predicted);
    }
    summary.seconds = seconds_since(epoch_start);
    state.result.epochs.push_back(summary);
    if (observer) observer->on_epoch(*this, summary);
    position_.batch = 0;
    position_.epoch_steps = 0;
    position_.epoch_loss_sum = 0.0;
  }
  if (observer) observer->on_run_end(*this);
  state.result.position = position_;
  state.result.median_step_seconds = median(std::move(state.step_seconds));
  state.result.total_seconds = seconds_since(run_start);
  return std::move(state.result);
}

bool Trainer::run_epoch(data::BatchLoader& loader, RunState& state, Observer* observer) {
  TrainResult& result = state.result;
  data::Batch& batch = state.batch;
  const std::int64_t max_steps = spec_.train.max_steps;
  while (true) {
    // Stopped between two steps, before the next batch is fetched: max_steps ends the run (its
    // last epoch gets its summary), the interrupt leaves the epoch open for a checkpoint.
    if (interrupt_at_ && position_.step >= *interrupt_at_) {
      result.interrupted = true;
      return false;
    }
    if (max_steps > 0 && position_.step >= max_steps) return position_.epoch_steps > 0;
    if (!loader.next(batch)) return true;
    batch.index = position_.batch;  // the run's count (the loader's but after a restore fault)
    if (observer) observer->before_step(batch, position_.step);
    const auto step_start = Clock::now();
    // The dropout stream's counter is the step (behind it only after a test-only restore fault).
    nn::StepContext ctx{/*training=*/true,
                        static_cast<std::uint64_t>(position_.step) - dropout_counter_lag_,
                        &determinism_};
    const Staged in = stage(batch);
    const float loss = train_step(in, ctx, state);
    const double seconds = seconds_since(step_start);
    state.step_seconds.push_back(seconds);
    const bool changed = observer && observer->after_update(*model_, position_.step);

    StepEvent event{position_.epoch, position_.step, &batch, loss, seconds};
    if (state.digests != nullptr && state.digests->complete && !changed) {
      event.update_digests = state.digests;
    }
    ++position_.step;
    ++position_.batch;
    ++position_.epoch_steps;
    position_.epoch_loss_sum += loss;
    position_.last_loss = loss;
    result.steps = position_.step;
    result.final_loss = loss;
    if (observer) observer->on_step(*this, event);
  }
}

float Trainer::train_step(const Staged& in, const nn::StepContext& ctx, RunState& state) {
  const int batch = static_cast<int>(in.images.dim(0));
  // At most three tries: a replay whose graph no longer fits is captured again, and a failed
  // capture runs eager; each answer of begin_step moves toward eager.
  for (int attempt = 0;; ++attempt) {
    const std::int64_t iterations = optimizer_->iterations();
    const backend::StepLaunchDecision launch = ops_->begin_step({batch, step_graphs_});
    // Read after synchronize(): a device backend queues the backward pass without waiting.
    float loss = 0.0f;
    std::string op_failure;
    try {
      const Tensor& out = model_->forward(*ops_, in.images, ctx);
      ops_->enter_layer(kLossLayer);
      nn::compute_loss_when_done(*ops_, spec_.loss, out, in.labels, state.output_grad,
                                 determinism_.mode_for(spec::ReducingOp::loss), &loss);
      model_->backward(*ops_, state.output_grad, ctx);
      optimizer_->step(state.params, state.digests);
    } catch (const std::exception& e) {
      // An op that throws while its step is captured breaks the capture, whatever it was: the
      // step runs again, eager. Anywhere else the failure is the run's.
      const bool retry = launch.launch == backend::StepLaunch::capture && attempt < 2;
      static_cast<void>(ops_->end_step(e.what()));
      if (!retry) throw;
      op_failure = e.what();
    }
    if (op_failure.empty() && ops_->end_step("")) {
      // The step ends when its work is done, not when a device backend has queued it: else its
      // unfinished tail would be timed in the next step, or in the observer (the recorder).
      ops_->synchronize();
      state.result.step_launches.add(launch);
      return loss;
    }
    // Nothing of the step ran: its host side (the optimizer's count) is undone, and it runs again.
    optimizer_->rewind(iterations);
    if (attempt >= 2) {
      throw std::logic_error("training step " + std::to_string(position_.step) +
                             " did not run in three tries (" + backend::to_string(launch.launch) +
                             ")");
    }
  }
}

}  // namespace ra::train
