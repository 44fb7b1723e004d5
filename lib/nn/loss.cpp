#include "nn/loss.h"

#include "nn/backend_modes.h"

namespace ra::nn {

float compute_loss(backend::Ops& ops, spec::Loss loss, const Tensor& output,
                   std::span<const std::int32_t> labels, Tensor* output_grad,
                   spec::KernelMode mode) {
  const int n = static_cast<int>(output.dim(0));
  const int classes = static_cast<int>(output.dim(1));
  float* grad = nullptr;
  if (output_grad != nullptr) {
    output_grad->resize(output.shape());
    grad = output_grad->data();
  }
  if (loss == spec::Loss::mean_squared_error) {
    return ops.mean_squared_error(n, classes, output.data(), labels.data(), grad, to_backend(mode));
  }
  return ops.softmax_cross_entropy(n, classes, output.data(), labels.data(), grad,
                                   to_backend(mode));
}

void compute_loss_when_done(backend::Ops& ops, spec::Loss loss, const Tensor& output,
                            std::span<const std::int32_t> labels, Tensor& output_grad,
                            spec::KernelMode mode, float* value) {
  output_grad.resize(output.shape());
  const auto kind = loss == spec::Loss::mean_squared_error
                        ? backend::Ops::LossKind::mean_squared_error
                        : backend::Ops::LossKind::softmax_cross_entropy;
  ops.loss_when_done(kind, static_cast<int>(output.dim(0)), static_cast<int>(output.dim(1)),
                     output.data(), labels.data(), output_grad.data(), to_backend(mode), value);
}

std::int64_t predict_classes(const Tensor& output, std::span<const std::int32_t> labels,
                             std::span<std::int32_t> predicted) {
  const std::int64_t n = output.dim(0), classes = output.dim(1);
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = output.data() + i * classes;
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    if (!predicted.empty())
      predicted[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(best);
    if (best == labels[i]) ++correct;
  }
  return correct;
}

std::int64_t count_correct(const Tensor& output, std::span<const std::int32_t> labels) {
  return predict_classes(output, labels, {});
}

}  // namespace ra::nn
