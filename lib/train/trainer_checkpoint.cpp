// A trainer's state as a checkpoint, and a checkpoint's state put back into a trainer
// (train/trainer.h, train/checkpoint.h).
#include <algorithm>

#include "core/digest.h"
#include "core/error.h"
#include "data/loader.h"
#include "rng/stream.h"
#include "spec/parse.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace ra::train {
namespace {

std::string spec_digest_hex(const spec::ExperimentSpec& spec) {
  // As a trace header's spec_digest (trace/trace_io.h spec_digest_of), so the two can be matched.
  const std::string text = spec::to_json(spec).dump();
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(text.size())}, text.data(),
                      text.size())
      .hex();
}

const Tensor* find_tensor(const std::vector<std::pair<std::string, Tensor>>& tensors,
                          const std::string& name) {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

}  // namespace

std::vector<RngStreamState> Trainer::rng_streams(const TrainPosition& at) const {
  std::vector<RngStreamState> streams;
  streams.push_back({std::string(rng::kDataOrderStream),
                     rng::derive_key(seeds_.data, rng::kDataOrderStream),
                     static_cast<std::uint64_t>(at.epoch - order_counter_lag_)});
  for (const auto& layer : model_->layers()) {
    if (layer->info().spec.type != spec::LayerType::dropout) continue;
    const std::string name = rng::dropout_stream(layer->info().spec.name);
    streams.push_back({name, rng::derive_key(seeds_.dropout, name),
                       static_cast<std::uint64_t>(at.step) - dropout_counter_lag_});
  }
  return streams;
}

Checkpoint Trainer::checkpoint(const TrainPosition& at) const {
  Checkpoint c;
  c.spec_name = spec_.name;
  c.spec_digest = spec_digest_hex(spec_);
  c.seeds = seeds_;
  c.position = at;
  c.optimizer_iterations = optimizer_->iterations();
  for (const nn::Param* p : model_->params()) c.weights.emplace_back(p->name, p->value.to_host());
  // The model's buffers (batchnorm's running statistics) beside the weights, by their own names.
  for (const nn::NamedBuffer* b : model_->buffers()) {
    c.weights.emplace_back(b->name, b->value.to_host());
  }
  for (const auto& [name, tensor] : optimizer_->state()) {
    c.optimizer_state.emplace_back(name, tensor->to_host());
  }
  c.rng_streams = rng_streams(at);
  c.epoch_order = data::epoch_order(data_.train->size(), spec_.data.shuffle,
                                    rng::derive_key(seeds_.data, rng::kDataOrderStream),
                                    at.epoch - order_counter_lag_);
  return c;
}

// The position's numbers must agree with each other and with the spec (issue 61: a checkpoint
// whose step disagreed with its epoch and batch was restored, and the run went on elsewhere).
void Trainer::check_position(const Checkpoint& c) const {
  const TrainPosition& p = c.position;
  const std::int64_t per_epoch = batches_per_epoch(spec_, *data_.train);
  const std::string where = "checkpoint position (step " + std::to_string(p.step) + ", epoch " +
                            std::to_string(p.epoch) + ", batch " + std::to_string(p.batch) + ")";
  if (p.epoch >= spec_.train.epochs || p.batch > per_epoch) {
    throw InputError(where + " is outside the spec's training");
  }
  if (p.step != p.epoch * per_epoch + p.batch || p.epoch_steps != p.batch) {
    throw InputError(
        where + " does not add up: " + std::to_string(per_epoch) + " batches an epoch make step " +
        std::to_string(p.epoch * per_epoch + p.batch) + ", and the epoch's steps so far (" +
        std::to_string(p.epoch_steps) + ") must be its batch");
  }
  // An optimizer counts one iteration a step (fewer only where a restore left the schedule out).
  if (c.optimizer_iterations < 0 || c.optimizer_iterations > p.step) {
    throw InputError(where + ": the optimizer's " + std::to_string(c.optimizer_iterations) +
                     " iterations are more than the steps done");
  }
}

void Trainer::restore(const Checkpoint& c, const RestoreSkips& skips) {
  if (c.spec_digest != spec_digest_hex(spec_)) {
    throw InputError("checkpoint of spec '" + c.spec_name +
                     "' (another spec, or the same with other values): resume it with the spec "
                     "it was written with");
  }
  check_position(c);
  // The streams are this run's (the same keys) and the data the same (the same permutation).
  const std::vector<RngStreamState> expected = rng_streams(c.position);
  for (const RngStreamState& s : expected) {
    const auto saved = std::find_if(c.rng_streams.begin(), c.rng_streams.end(),
                                    [&](const RngStreamState& x) { return x.name == s.name; });
    if (saved == c.rng_streams.end() || saved->key.k0 != s.key.k0 || saved->key.k1 != s.key.k1) {
      throw InputError("checkpoint: random stream '" + s.name +
                       "' is missing or has another key (written with other seeds?)");
    }
  }
  if (c.epoch_order != data::epoch_order(data_.train->size(), spec_.data.shuffle,
                                         expected.front().key, c.position.epoch)) {
    throw InputError("checkpoint: the sample order of epoch " + std::to_string(c.position.epoch) +
                     " differs from this data set's: was the training data changed?");
  }
  std::vector<optim::Parameter> params;
  for (nn::Param* p : model_->params()) {
    params.push_back({p->name, &p->value, &p->grad});
    const Tensor* saved = find_tensor(c.weights, p->name);
    if (saved == nullptr || saved->shape() != p->value.shape()) {
      throw InputError("checkpoint: weights of '" + p->name + "' are missing or misshapen");
    }
    if (!skips.weights) p->value.copy_from(*saved);
  }
  for (nn::NamedBuffer* b : model_->buffers()) {
    const Tensor* saved = find_tensor(c.weights, b->name);
    if (saved == nullptr || saved->shape() != b->value.shape()) {
      throw InputError("checkpoint: buffer '" + b->name + "' is missing or misshapen");
    }
    if (!skips.weights) b->value.copy_from(*saved);
  }
  optimizer_->restore(
      params, skips.schedule ? 0 : c.optimizer_iterations,
      skips.optimizer_state ? std::vector<std::pair<std::string, Tensor>>{} : c.optimizer_state);
  position_ = c.position;
  for (const RngStreamState& s : c.rng_streams) {
    const std::uint64_t counter = skips.rng_streams ? 0 : s.counter;
    if (s.name == rng::kDataOrderStream) {
      order_counter_lag_ = c.position.epoch - static_cast<std::int64_t>(counter);
    } else {
      dropout_counter_lag_ = static_cast<std::uint64_t>(c.position.step) - counter;
    }
  }
  // The run counts its batches on; its loader starts the epoch again from the first.
  if (skips.data_position) loader_batch_lag_ = position_.batch;
}

}  // namespace ra::train
