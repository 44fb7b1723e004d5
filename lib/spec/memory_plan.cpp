#include "spec/memory_plan.h"

#include <cstdio>
#include <limits>
#include "core/integer_math.h"

namespace ra::spec {
namespace {

constexpr std::uint64_t kFloat = 4;
constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

// What a run's recorder holds of its trace (trace/trace_file_writer.h: each record is written when
// it is made): one StepRecord (step, epoch, batch, three batch digests, the loss bits, the
// optimizer state digest and the vectors' headers, ~160 bytes, plus a gradient and a weight
// digest per parameter tensor), and every step's time (8 bytes), whose median the end record
// holds.
constexpr std::uint64_t kStepRecordBytes = 160;
constexpr std::uint64_t kStepBytesPerParamTensor = 32;
constexpr std::uint64_t kStepTimeBytes = 8;

std::uint64_t u64(std::int64_t v) {
  return v < 0 ? 0 : static_cast<std::uint64_t>(v);
}

int optimizer_state_count(const OptimizerSpec& o) {
  switch (o.type) {
    case OptimizerType::sgd:
      return o.momentum > 0.0 ? 1 : 0;
    case OptimizerType::rmsprop:
      return 1;
    case OptimizerType::adam:
    case OptimizerType::adadelta:
      return 2;
  }
  return 2;
}

std::uint64_t sample_elements(const Shape& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n = saturating_mul(n, u64(d));
  return n;
}

// One set held in memory: float32 pixels and an int32 label per sample.
std::uint64_t set_bytes(const Shape& shape, std::int64_t samples) {
  return saturating_mul(u64(samples), saturating_add(saturating_mul(sample_elements(shape), kFloat),
                                                     sizeof(std::int32_t)));
}

std::int64_t planned_steps(const ExperimentSpec& spec, std::int64_t train_samples) {
  const std::int64_t b = spec.data.batch_size > 0 ? spec.data.batch_size : 1;
  const std::int64_t batches = spec.data.drop_last ? train_samples / b : ceil_div(train_samples, b);
  std::int64_t total = 0;
  if (__builtin_mul_overflow(batches, std::int64_t{spec.train.epochs}, &total)) {
    total = std::numeric_limits<std::int64_t>::max();
  }
  return spec.train.max_steps > 0 ? std::min(total, spec.train.max_steps) : total;
}

}  // namespace

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

std::uint64_t MemoryPlan::total() const noexcept {
  std::uint64_t t = 0;
  for (std::uint64_t part :
       {parameters, gradients, optimizer_state, activations, data, step_records}) {
    t = saturating_add(t, part);
  }
  return t;
}

std::optional<std::int64_t> samples_used(const DatasetSpec& set,
                                         std::optional<std::int64_t> file_samples) {
  if (set.limit > 0) return set.limit;
  if (!from_files(set.format)) return set.samples;
  return file_samples;
}

MemoryPlan plan_memory(const ExperimentSpec& spec, const ResolvedModel& model,
                       std::int64_t train_samples, std::int64_t eval_samples) {
  MemoryPlan plan;
  const std::uint64_t batch = u64(spec.data.batch_size);
  std::uint64_t param_tensors = 0, largest = 0;
  // Per sample: the batch itself, and per layer its output, the gradient of its input and one
  // more output-sized tensor (activation scratch, dropout mask or max-pool argmax).
  std::uint64_t per_sample = sample_elements(model.input);
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const ResolvedLayer& l = model.layers[i];
    if (u64(l.params) > largest) {
      largest = u64(l.params);
      plan.largest_layer = i;
    }
    if (l.params > 0) param_tensors += l.spec.use_bias ? 2 : 1;
    per_sample = saturating_add(per_sample, saturating_mul(2, sample_elements(l.output)));
    per_sample = saturating_add(per_sample, sample_elements(l.input));
  }
  plan.parameters = saturating_mul(u64(model.params), kFloat);
  plan.gradients = plan.parameters;
  plan.optimizer_state = saturating_mul(
      plan.parameters, static_cast<std::uint64_t>(optimizer_state_count(spec.optimizer)));
  // Batches held at once: the trainer's, plus with loader workers a ring of 2 per worker, one
  // being assembled per worker and the hand-off.
  const std::uint64_t batches_held =
      1 + (spec.data.workers > 0 ? 3 * u64(spec.data.workers) + 1 : 0);
  plan.activations =
      saturating_add(saturating_mul(saturating_mul(batch, per_sample), kFloat),
                     saturating_mul(saturating_mul(batches_held - 1, batch),
                                    saturating_mul(sample_elements(model.input), kFloat)));
  // The epoch's sample order (int64) exists twice while the next epoch's is drawn.
  plan.data = saturating_add(set_bytes(model.input, train_samples),
                             saturating_mul(u64(train_samples), 2 * sizeof(std::int64_t)));
  if (spec.data.eval) {
    plan.data = saturating_add(plan.data, set_bytes(model.input, eval_samples));
  }
  plan.steps = planned_steps(spec, train_samples);
  plan.step_records = saturating_add(
      saturating_mul(u64(plan.steps), kStepTimeBytes),
      saturating_add(kStepRecordBytes, saturating_mul(kStepBytesPerParamTensor, param_tensors)));
  return plan;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes == kSaturated) return "more than 16 EiB";
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  }
  return text;
}

std::string describe(const MemoryPlan& p) {
  return "parameters " + format_bytes(p.parameters) + ", gradients " + format_bytes(p.gradients) +
         ", optimizer state " + format_bytes(p.optimizer_state) + ", activations of one batch " +
         format_bytes(p.activations) + ", data " + format_bytes(p.data) + ", records of " +
         std::to_string(p.steps) + " steps " + format_bytes(p.step_records);
}

}  // namespace ra::spec
