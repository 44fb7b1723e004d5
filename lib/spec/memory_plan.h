#pragma once
// The memory one training run of a spec will hold, estimated from the spec alone, before anything
// is allocated (docs/spec.md, "Limits"). An estimate from below: it counts the tensors the trainer
// always allocates, in float32 (4 bytes), not allocator slack or kernel scratch.
//
// Arithmetic saturates at 2^64 - 1 rather than wrapping, so an absurd spec reads as "more than
// the limit", never as a small number.
#include <cstdint>
#include <optional>
#include <string>

#include "spec/resolve.h"
#include "spec/spec.h"

namespace ra::spec {

// a * b and a + b, saturating at UINT64_MAX.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept;
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept;

struct MemoryPlan {
  std::uint64_t parameters = 0;       // weights and biases
  std::uint64_t gradients = 0;        // one per parameter
  std::uint64_t optimizer_state = 0;  // 0 (sgd), 1 (sgd with momentum, rmsprop), 2 (adam, adadelta)
  std::uint64_t activations = 0;      // one batch: input, each layer's output, its gradient, a mask
  std::uint64_t data = 0;             // train and eval sets: float32 pixels, int32 labels, order
  std::uint64_t step_records = 0;     // the recorder's: one step record and every step's time
  std::int64_t steps = 0;             // planned steps of the run
  std::size_t largest_layer = 0;      // index of the layer with the most parameters
  std::uint64_t total() const noexcept;
};

// Samples of one set as used: its `limit`, else its `samples` (synthetic), else `file_samples`
// (idx, cifar10, npy: known once the files are read; nullopt before).
std::optional<std::int64_t> samples_used(const DatasetSpec& set,
                                         std::optional<std::int64_t> file_samples = {});

// The plan of `spec` with model `model`; `train_samples` / `eval_samples` are the sets' sizes as
// used (eval ignored when the spec has no eval set).
MemoryPlan plan_memory(const ExperimentSpec& spec, const ResolvedModel& model,
                       std::int64_t train_samples, std::int64_t eval_samples);

// "1.5 GiB", "512 KiB", "12 B"; "more than 16 EiB" for a saturated value.
std::string format_bytes(std::uint64_t bytes);
// "parameters 1.2 MiB, gradients 1.2 MiB, ..., total 3.1 GiB"
std::string describe(const MemoryPlan& plan);

}  // namespace ra::spec
