#include "record/recorder.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <span>
#include <string>

#include "core/parallel_digest.h"
#include "core/statistics.h"
#include "trace/tensor_digests.h"

namespace ra::record {
namespace {

std::vector<const Tensor*> values_of(const nn::Model& model) {
  std::vector<const Tensor*> out;
  for (const nn::Param* p : model.params()) out.push_back(&p->value);
  return out;
}

// The model's buffers (batch normalisation's running statistics), in the header's order.
std::vector<const Tensor*> buffers_of(const nn::Model& model) {
  std::vector<const Tensor*> out;
  for (const nn::NamedBuffer* b : model.buffers()) out.push_back(&b->value);
  return out;
}

std::vector<const Tensor*> grads_of(const nn::Model& model) {
  std::vector<const Tensor*> out;
  for (const nn::Param* p : model.params()) out.push_back(&p->grad);
  return out;
}

// Where each of a list of tensors is digested: host tensors chunk by chunk on the recorder's
// threads, device tensors where they are, by the backend. `*_slots`: their places in the list.
struct DigestSplit {
  std::vector<DigestInput> host;
  std::vector<std::size_t> host_slots;
  std::vector<const Tensor*> device;
  std::vector<std::size_t> device_slots;
};

DigestSplit split_by_memory(const std::vector<const Tensor*>& tensors) {
  DigestSplit split;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = *tensors[i];
    if (t.on_host()) {
      split.host.push_back({DType::f32, t.shape(), t.data(), t.bytes()});
      split.host_slots.push_back(i);
    } else {
      split.device.push_back(&t);
      split.device_slots.push_back(i);
    }
  }
  return split;
}

}  // namespace

Recorder::Recorder(trace::TraceHeader header, int digest_threads, std::filesystem::path trace_file)
    : pool_(std::max(1, digest_threads)) {
  trace_.header = std::move(header);
  if (!trace_file.empty()) file_.emplace(std::move(trace_file));
}

void Recorder::start_file() {
  if (file_ && !file_->started()) {
    file_->start(trace_.header, trace_.initial_weights, trace_.initial_buffers);
  }
}

std::vector<Digest128> Recorder::digest_all(const train::Trainer& trainer,
                                            const std::vector<const Tensor*>& tensors) {
  std::vector<Digest128> out(tensors.size());
  const DigestSplit split = split_by_memory(tensors);
  if (!split.device.empty()) {
    const std::vector<Digest128> d = trainer.backend_digests(split.device);
    for (std::size_t k = 0; k < d.size(); ++k) out[split.device_slots[k]] = d[k];
  }
  const std::vector<Digest128> d = digest_in_parallel(pool_, split.host);
  for (std::size_t k = 0; k < d.size(); ++k) out[split.host_slots[k]] = d[k];
  return out;
}

void Recorder::record_ops(OpRecorder& ops, const trace::OpWindow& window) {
  ops_ = &ops;
  trace_.header.trace_ops = window;
  // Version 4 (a level of detail) holds op records as well.
  if (trace_.header.format_version < trace::kTraceFormatVersionWithOps) {
    trace_.header.format_version = trace::kTraceFormatVersionWithOps;
  }
}

void Recorder::before_step(data::Batch& batch, std::int64_t step) {
  clock_.before_step(batch, step);
  if (ops_ == nullptr) return;
  ops_->begin_step(step, trace_.header.trace_ops->contains(step));
  ops_->record_batch(batch);
}

void Recorder::on_start(const train::Trainer& trainer) {
  if (trainer.position().step > 0) {
    // The optimizer's state tensors are the new trainer's (restored, so they exist already).
    state_.clear();
    for (const auto& [name, tensor] : trainer.optimizer().state()) state_.push_back(tensor);
    // Its update digests are counted from zero again.
    counted_hash_nanoseconds_ = 0;
    return;
  }
  trace_.header.params.clear();
  for (const nn::Param* p : trainer.model().params()) {
    trace_.header.params.push_back({p->name, p->value.shape()});
  }
  trace_.initial_weights = digest_all(trainer, values_of(trainer.model()));
  // Buffers are version 3's: a model with any (batch normalisation) writes that version's records
  // (docs/trace-format.md), compared as a category of their own.
  trace_.header.buffers.clear();
  for (const nn::NamedBuffer* b : trainer.model().buffers()) {
    trace_.header.buffers.push_back({b->name, b->value.shape()});
  }
  if (!trace_.header.buffers.empty() &&
      trace_.header.format_version < trace::kTraceFormatVersionWithStatus) {
    trace_.header.format_version = trace::kTraceFormatVersionWithStatus;
  }
  trace_.initial_buffers = digest_all(trainer, buffers_of(trainer.model()));
}

void Recorder::on_step(const train::Trainer& trainer, const train::StepEvent& e) {
  const auto start = std::chrono::steady_clock::now();
  // The step's end waited for the backend: the previous step's digests are in.
  write_pending();
  trace::StepRecord r;
  r.step = e.step;
  r.epoch = e.epoch;
  r.batch = e.batch->index;
  r.batch_indices = digest(std::span<const std::int64_t>(e.batch->sample_indices));
  r.batch_labels = digest(std::span<const std::int32_t>(e.batch->labels));
  r.loss_bits = std::bit_cast<std::uint32_t>(e.loss);
  r.seconds = e.seconds;
  step_seconds_.push_back(e.seconds);
  if (ops_ != nullptr && trace_.header.trace_ops->contains(e.step)) {
    r.ops_recorded = true;
    r.ops = ops_->take_records();
  }
  if (ops_ != nullptr) {  // the op records' digests, made inside the step, are recording time
    recording_seconds_ += ops_->recording_seconds() - counted_op_seconds_;
    counted_op_seconds_ = ops_->recording_seconds();
  }

  const nn::Model& model = trainer.model();
  if (!state_listed_) {  // created by the first step; the pointers stay valid (optimizer.h)
    for (const auto& [name, tensor] : trainer.optimizer().state()) {
      trace_.header.optimizer_state.push_back(name);
      state_.push_back(tensor);
    }
    state_listed_ = true;
  }
  if (const optim::UpdateDigests* u = e.update_digests) {
    // The update hashed every chunk of the gradients, weights and state: combine them. Its
    // hashing time, summed over the backend's threads, counts as recording time spread over
    // those threads (they hashed in parallel, inside the step).
    r.batch_inputs = digest_all(trainer, {&e.batch->images})[0];
    const auto params = model.params();
    const auto from_chunks = [](const Tensor& t, const std::vector<xxh3::Hash128>& chunks) {
      return digest_from_chunks(DType::f32, t.shape(), chunks);
    };
    for (std::size_t i = 0; i < params.size(); ++i) {
      r.grads.push_back(from_chunks(params[i]->grad, u->params[i].grad));
      r.weights.push_back(from_chunks(params[i]->value, u->params[i].value));
    }
    // state() lists each parameter's state kinds in order, as the update digested them.
    std::vector<Digest128> state_digests;
    const std::size_t kinds = params.empty() ? 0 : state_.size() / params.size();
    for (std::size_t k = 0; k < state_.size(); ++k) {
      state_digests.push_back(from_chunks(*state_[k], u->params[k / kinds].state[k % kinds]));
    }
    r.optimizer_state = digest(std::span<const Digest128>(state_digests));
    r.buffers = digest_all(trainer, buffers_of(model));
    const std::int64_t hashed = u->hash_nanoseconds.load(std::memory_order_relaxed);
    recording_seconds_ += static_cast<double>(hashed - counted_hash_nanoseconds_) * 1e-9 /
                          std::max(1, trainer.ops().threads());
    counted_hash_nanoseconds_ = hashed;
    write_step(std::move(r));
  } else {
    queue_step_digests(trainer, e, std::move(r));
  }
  recording_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Recorder::queue_step_digests(const train::Trainer& trainer, const train::StepEvent& e,
                                  trace::StepRecord r) {
  // All tensors of the step in one batch: inputs, gradients, weights, buffers, optimizer state.
  std::vector<const Tensor*> tensors{&e.batch->images};
  const auto grads = grads_of(trainer.model()), values = values_of(trainer.model()),
             buffers = buffers_of(trainer.model());
  tensors.insert(tensors.end(), grads.begin(), grads.end());
  tensors.insert(tensors.end(), values.begin(), values.end());
  tensors.insert(tensors.end(), buffers.begin(), buffers.end());
  tensors.insert(tensors.end(), state_.begin(), state_.end());

  PendingStep& p = pending_.emplace();
  p.record = std::move(r);
  p.params = grads.size();
  p.buffers = buffers.size();
  p.all.resize(tensors.size());
  DigestSplit split = split_by_memory(tensors);
  p.device_slots = std::move(split.device_slots);
  const std::vector<Digest128> d = digest_in_parallel(pool_, split.host);
  for (std::size_t k = 0; k < d.size(); ++k) p.all[split.host_slots[k]] = d[k];
  if (split.device.empty()) {
    write_pending();
  } else {
    trainer.backend_digests_when_done(split.device, p.device);
  }
}

void Recorder::write_pending() {
  if (!pending_) return;
  PendingStep p = std::move(*pending_);
  pending_.reset();
  const std::vector<Digest128>& device = *p.device;
  if (device.size() != p.device_slots.size()) {
    throw std::logic_error("the backend stored " + std::to_string(device.size()) + " of step " +
                           std::to_string(p.record.step) + "'s " +
                           std::to_string(p.device_slots.size()) +
                           " digests by its synchronize() (Ops::digest_when_done)");
  }
  for (std::size_t k = 0; k < device.size(); ++k) p.all[p.device_slots[k]] = device[k];
  trace::StepRecord& r = p.record;
  const auto at = [&](std::size_t i) { return p.all.begin() + static_cast<std::ptrdiff_t>(i); };
  r.batch_inputs = p.all[0];
  r.grads.assign(at(1), at(1 + p.params));
  r.weights.assign(at(1 + p.params), at(1 + 2 * p.params));
  const std::size_t state = 1 + 2 * p.params + p.buffers;
  r.buffers.assign(at(1 + 2 * p.params), at(state));
  r.optimizer_state =
      digest(std::span<const Digest128>(p.all.data() + state, p.all.size() - state));
  write_step(std::move(r));
}

void Recorder::settle_pending(const train::Trainer& trainer) {
  if (!pending_) return;
  const auto start = std::chrono::steady_clock::now();
  trainer.settle_backend();
  write_pending();
  recording_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Recorder::write_step(trace::StepRecord r) {
  if (const auto& plan = trace_.header.tensor_digests; plan && !plan->at(r.step)) {
    trace::keep_category_digests(r);  // the level of detail
  }
  start_file();
  if (file_) {
    file_->step(r);
  } else {
    trace_.steps.push_back(std::move(r));
  }
}

void Recorder::on_run_end(const train::Trainer& trainer) {
  settle_pending(trainer);
}

void Recorder::resume_point(const train::Trainer& trainer, const trace::ResumePoint& point) {
  settle_pending(trainer);
  start_file();
  trace_.resume_points.push_back(point);
  if (file_) file_->resume_point(point);
}

void Recorder::on_epoch(const train::Trainer& trainer, const train::EpochSummary& s) {
  settle_pending(trainer);
  start_file();
  trace_.epochs.push_back(trace::EpochRecord{s.epoch, s.steps, s.mean_train_loss, s.eval_loss,
                                             s.eval_accuracy, s.seconds});
  if (file_) file_->epoch(trace_.epochs.back());
}

trace::Trace Recorder::finish(const train::Trainer& trainer, const train::TrainResult& result) {
  settle_pending(trainer);
  trace::FinalRecord f;
  f.steps = result.steps;
  f.final_loss_bits = std::bit_cast<std::uint32_t>(result.final_loss);
  if (!result.epochs.empty()) {
    f.eval_loss = result.epochs.back().eval_loss;
    f.eval_accuracy = result.epochs.back().eval_accuracy;
  }
  // The recorder's own: the steps of every trainer of a resumed run (equal to the result's else).
  f.median_step_seconds = step_seconds_.empty() ? result.median_step_seconds
                                                : median(std::vector<double>(step_seconds_));
  f.total_seconds = result.total_seconds;
  f.recording_seconds = recording_seconds_;
  if (const std::optional<double> step = clock_.median_step_seconds();
      step && calibration_ && calibration_->step_wall_seconds > 0.0) {
    f.recording_cost =
        trace::RecordingCost{*step, calibration_->step_wall_seconds, calibration_->steps};
  }
  f.weights = digest_all(trainer, values_of(trainer.model()));
  f.buffers = digest_all(trainer, buffers_of(trainer.model()));
  f.predictions = predictions_;
  if (trainer.step_graphs()) {
    const backend::StepLaunchCounts& launches = result.step_launches;
    f.step_launch = trace::StepLaunchRecord{launches.eager, launches.capture, launches.replay,
                                            launches.eager_reasons};
  }
  // The ledger is complete only now: autotuned algorithms are chosen at their first call.
  start_file();
  trace_.header.ledger = trainer.ops().ledger();
  if (file_) file_->finish(trace_.header, f);
  trace_.final = std::move(f);
  return std::move(trace_);
}

}  // namespace ra::record
