#include "record/resume_state.h"

#include <algorithm>
#include <bit>
#include <span>

#include "train/checkpoint.h"

namespace ra::record {
namespace {

Digest128 words_digest(const std::vector<std::int64_t>& words) {
  return digest(std::span<const std::int64_t>(words));
}

}  // namespace

trace::ResumeState resume_state(const train::Trainer& trainer, const data::Batch& next) {
  trace::ResumeState s;
  std::vector<const Tensor*> weights;
  for (const nn::Param* p : trainer.model().params()) weights.push_back(&p->value);
  s.weights = digest(std::span<const Digest128>(trainer.backend_digests(weights)));
  std::vector<const Tensor*> state;
  for (const auto& [name, tensor] : trainer.optimizer().state()) state.push_back(tensor);
  s.optimizer_state = digest(std::span<const Digest128>(trainer.backend_digests(state)));
  const optim::Optimizer& o = trainer.optimizer();
  s.schedule = words_digest({o.iterations(), std::bit_cast<std::int64_t>(o.learning_rate())});
  for (const train::RngStreamState& r : trainer.rng_streams(trainer.position())) {
    s.rng_streams.emplace_back(
        r.name, words_digest({r.key.k0, r.key.k1, static_cast<std::int64_t>(r.counter)}));
  }
  s.next_batch = digest(std::span<const std::int64_t>(next.sample_indices));
  return s;
}

ResumeStateRecorder::ResumeStateRecorder(Recorder& recorder, std::vector<std::int64_t> pass_steps)
    : recorder_(recorder), pass_steps_(std::move(pass_steps)) {}

void ResumeStateRecorder::expect_resume(std::int64_t step, std::uint64_t bytes,
                                        double write_seconds, double read_seconds) {
  resume_ = trace::ResumePoint{step, step, true, {}, bytes, write_seconds, read_seconds};
}

void ResumeStateRecorder::before_step(data::Batch& batch, std::int64_t step) {
  if (trainer_ == nullptr) return;
  if (resume_ && resume_->step == step) {
    resume_->state = resume_state(*trainer_, batch);
    recorder_.resume_point(*trainer_, *resume_);
    resume_.reset();
  } else if (std::find(pass_steps_.begin(), pass_steps_.end(), step) != pass_steps_.end()) {
    trace::ResumePoint passed;
    passed.step = passed.interrupt_at = step;
    passed.state = resume_state(*trainer_, batch);
    recorder_.resume_point(*trainer_, passed);
  }
}

}  // namespace ra::record
