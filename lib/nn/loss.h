#pragma once
// Loss and metric over a batch of model outputs.
#include <cstdint>
#include <span>

#include "backend/ops.h"
#include "core/tensor.h"
#include "spec/spec.h"

namespace ra::nn {

// Mean loss over the batch; writes the gradient w.r.t. `output` into *output_grad when given.
// `output`, `labels` and `output_grad` are in the backend's memory.
float compute_loss(backend::Ops& ops, spec::Loss loss, const Tensor& output,
                   std::span<const std::int32_t> labels, Tensor* output_grad,
                   spec::KernelMode mode);

// The same for a training step (the gradient always written), with the loss in *value once
// ops.synchronize() has returned (backend::Ops::loss_when_done): the step need not wait for it.
void compute_loss_when_done(backend::Ops& ops, spec::Loss loss, const Tensor& output,
                            std::span<const std::int32_t> labels, Tensor& output_grad,
                            spec::KernelMode mode, float* value);

// Number of samples whose arg-max output (the first maximum on ties) equals the label (host).
std::int64_t count_correct(const Tensor& output, std::span<const std::int32_t> labels);
// The same, writing each sample's predicted class (that arg-max) into `predicted` (one per row).
std::int64_t predict_classes(const Tensor& output, std::span<const std::int32_t> labels,
                             std::span<std::int32_t> predicted);

}  // namespace ra::nn
