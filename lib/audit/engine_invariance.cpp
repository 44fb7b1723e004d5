#include "audit/engine_invariance.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/digest.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "nn/model.h"
#include "record/invariance_recorder.h"
#include "rng/stream.h"
#include "spec/resolve.h"
#include "train/backend_choice.h"

namespace ra::audit {
namespace {

// The plan's checks (engine_invariance.h), each an InputError naming what is wrong.
void check_plan(const trace::InvariancePlan& plan) {
  if (plan.sizes.empty()) throw InputError("invariance sweep: the plan has no batch sizes");
  for (std::size_t i = 0; i < plan.sizes.size(); ++i) {
    if (plan.sizes[i] < 1) {
      throw InputError("invariance sweep: batch size " + std::to_string(plan.sizes[i]) +
                       " (each must be at least 1)");
    }
    if (i > 0 && plan.sizes[i] <= plan.sizes[i - 1]) {
      throw InputError("invariance sweep: batch sizes must be ascending and distinct (" +
                       std::to_string(plan.sizes[i - 1]) + " before " +
                       std::to_string(plan.sizes[i]) + ")");
    }
  }
  if (plan.positions.empty()) throw InputError("invariance sweep: the plan has no positions");
  for (const std::string& position : plan.positions) trace::anchor_row(position, 1);
  for (const std::string& neighbours : plan.neighbours) {
    if (neighbours != "batch") {
      throw InputError(
          "invariance sweep: the engine fills the other rows from the spec's data "
          "only (\"batch\"), not \"" +
          neighbours + "\"");
    }
  }
}

// The samples the sweep's batches are made of: the first `count` of epoch 0's order of a run of
// the spec (its data seed is the spec's seed), as [count, C, H, W] images; row 0 is the anchor.
Tensor sweep_samples(const spec::ExperimentSpec& spec, int count) {
  const data::Dataset set =
      data::load_dataset(spec.data.train, spec.data.scale, "train", spec.model.input);
  if (set.size() < count) {
    throw InputError("invariance sweep: a batch of " + std::to_string(count) + " needs " +
                     std::to_string(count) + " samples; data.train has " +
                     std::to_string(set.size()));
  }
  const std::vector<std::int64_t> order = data::epoch_order(
      set.size(), spec.data.shuffle, rng::derive_key(spec.seed, rng::kDataOrderStream), 0);
  Tensor samples;
  samples.resize_batched(count, set.sample_shape);
  const auto per_sample = static_cast<std::size_t>(set.sample_elements());
  for (int i = 0; i < count; ++i) {
    std::copy_n(set.images.data() + static_cast<std::size_t>(order[i]) * per_sample, per_sample,
                samples.data() + static_cast<std::size_t>(i) * per_sample);
  }
  return samples;
}

// A batch of `size` rows: the anchor (sample 0) at `anchor_row`, samples 1, 2, ... in the others.
Tensor probe_batch(const Tensor& samples, int size, int anchor_row) {
  Tensor batch;
  const Shape sample(samples.shape().begin() + 1, samples.shape().end());
  batch.resize_batched(size, sample);
  const auto per_sample = static_cast<std::size_t>(element_count(sample));
  int next = 1;
  for (int row = 0; row < size; ++row) {
    const int source = row == anchor_row ? 0 : next++;
    std::copy_n(samples.data() + static_cast<std::size_t>(source) * per_sample, per_sample,
                batch.data() + static_cast<std::size_t>(row) * per_sample);
  }
  return batch;
}

// What the probes share: the recorder over the backend, the model, the samples.
struct Sweeper {
  record::InvarianceRecorder& recorder;
  nn::Model& model;
  const Tensor& samples;
  const spec::DeterminismSpec& determinism;

  trace::InvarianceProbe run(const trace::ProbeConfig& config) {
    const Tensor host_batch = probe_batch(samples, config.batch_size, config.anchor_row);
    Tensor staged(host_batch.shape(), recorder.memory());
    staged.copy_from(host_batch);
    recorder.begin_pass(config.batch_size, config.anchor_row, config.control);
    const nn::StepContext ctx{/*training=*/false, 0, &determinism};
    const Tensor& output = model.forward(recorder, staged, ctx);
    trace::InvarianceProbe probe;
    probe.config = config;
    probe.ops = recorder.take_ops();
    // The anchor's row of the output, as a tensor of one sample's output shape.
    const Tensor all = output.to_host();
    const Shape& row_shape = model.resolved().output;
    Tensor row(row_shape);
    std::copy_n(all.data() + static_cast<std::size_t>(config.anchor_row) * row.size(), row.size(),
                row.data());
    probe.output_digest = digest(row);
    probe.output_values.assign(row.begin(), row.end());
    return probe;
  }
};

// The probes' configurations in sweep order: each size above 1 (1 is the reference) with each
// position; where two positions name one row of a small batch, the first named runs.
std::vector<trace::ProbeConfig> probe_configs(const trace::InvariancePlan& plan) {
  std::vector<trace::ProbeConfig> configs;
  for (const int size : plan.sizes) {
    if (size == 1) continue;
    std::vector<int> rows;
    for (const std::string& position : plan.positions) {
      const int row = trace::anchor_row(position, size);
      if (std::find(rows.begin(), rows.end(), row) != rows.end()) continue;
      rows.push_back(row);
      configs.push_back({size, row, position, "batch", false});
    }
  }
  return configs;
}

trace::InvarianceSweep header_of(const spec::ExperimentSpec& spec, spec::KernelMode mode,
                                 const backend::Ops& backend, const nn::Model& model) {
  trace::InvarianceSweep sweep;
  sweep.source = "engine";
  sweep.model = spec.name;
  sweep.mode = spec::to_string(mode);
  sweep.device = backend.name() == "cuda" ? "cuda:0" : backend.name();  // CudaOps: device 0
  sweep.dtype = "float32";
  sweep.batch_dim = 0;
  sweep.sample_shape = model.resolved().input;
  sweep.output_shape = model.resolved().output;
  return sweep;
}

}  // namespace

trace::InvarianceSweep engine_invariance_sweep(const spec::ExperimentSpec& spec,
                                               const trace::InvariancePlan& plan,
                                               const EngineSweepOptions& options) {
  check_plan(plan);
  const Tensor samples = sweep_samples(spec, plan.sizes.back());
  const spec::DeterminismSpec determinism =
      options.mode ? spec::DeterminismSpec{*options.mode, {}} : spec.determinism;
  int threads = options.threads.value_or(spec.threads);
  if (threads <= 0) threads = hardware_threads();
  std::unique_ptr<backend::Ops> backend =
      options.make_backend ? options.make_backend(threads)
                           : train::make_backend(spec.device, threads, determinism.mode).ops;
  // Initial weights as a run of the spec draws them (train::RunSeeds::all(spec.seed)).
  nn::Model model(spec::resolve_model(spec.model), nn::ModelSeeds{spec.seed, spec.seed},
                  backend->memory());
  std::unordered_set<const void*> parameters;
  for (const nn::Param* p : model.params()) parameters.insert(p->value.data());
  record::InvarianceRecorder recorder(*backend, std::move(parameters));
  Sweeper sweeper{recorder, model, samples, determinism};

  trace::InvarianceSweep sweep = header_of(spec, determinism.mode, *backend, model);
  sweep.reference = sweeper.run({1, 0, "first", "", false});
  const std::vector<trace::ProbeConfig> configs = probe_configs(plan);
  for (const trace::ProbeConfig& config : configs) sweep.probes.push_back(sweeper.run(config));
  if (plan.control && !configs.empty()) {
    trace::ProbeConfig repeated = configs.front();
    repeated.control = true;
    trace::InvarianceProbe control = sweeper.run(repeated);
    if (const std::optional<int> index = recorder.control_op()) {
      const trace::InvarianceOp& op = sweep.reference.ops.at(static_cast<std::size_t>(*index));
      sweep.control = trace::InvarianceControl{*index, op.op, op.module};
      sweep.probes.push_back(std::move(control));
    }
  }
  return sweep;
}

}  // namespace ra::audit
