// String names of the spec's enumerations, as written in spec files and reports.
#include <string_view>

#include "core/op_table.h"
#include "spec/spec.h"

namespace ra::spec {

const char* to_string(Device d) {
  switch (d) {
    case Device::auto_select:
      return "auto";
    case Device::cpu:
      return "cpu";
    case Device::cuda:
      return "cuda";
  }
  return "?";
}
const char* to_string(DataFormat f) {
  switch (f) {
    case DataFormat::idx:
      return "idx";
    case DataFormat::random:
      return "random";
    case DataFormat::constant:
      return "constant";
    case DataFormat::cifar10:
      return "cifar10";
    case DataFormat::npy:
      return "npy";
  }
  return "?";
}
const char* to_string(FillMode m) {
  switch (m) {
    case FillMode::constant:
      return "constant";
    case FillMode::nearest:
      return "nearest";
  }
  return "?";
}
const char* to_string(ImageLayout l) {
  switch (l) {
    case ImageLayout::nchw:
      return "nchw";
    case ImageLayout::nhwc:
      return "nhwc";
  }
  return "?";
}
const char* to_string(LayerType t) {
  switch (t) {
    case LayerType::conv2d:
      return "conv2d";
    case LayerType::maxpool2d:
      return "maxpool2d";
    case LayerType::dense:
      return "dense";
    case LayerType::flatten:
      return "flatten";
    case LayerType::dropout:
      return "dropout";
    case LayerType::activation:
      return "activation";
    case LayerType::batchnorm:
      return "batchnorm";
    case LayerType::global_avgpool:
      return "global_avgpool";
    case LayerType::residual:
      return "residual";
  }
  return "?";
}
const char* to_string(Activation a) {
  switch (a) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::tanh:
      return "tanh";
    case Activation::sigmoid:
      return "sigmoid";
  }
  return "?";
}
const char* to_string(Padding p) {
  return p == Padding::same ? "same" : "valid";
}
const char* to_string(Initializer i) {
  switch (i) {
    case Initializer::glorot_uniform:
      return "glorot_uniform";
    case Initializer::he_normal:
      return "he_normal";
    case Initializer::zeros:
      return "zeros";
  }
  return "?";
}
const char* to_string(Loss l) {
  return l == Loss::mean_squared_error ? "mean_squared_error" : "softmax_cross_entropy";
}
const char* to_string(OptimizerType t) {
  switch (t) {
    case OptimizerType::sgd:
      return "sgd";
    case OptimizerType::adam:
      return "adam";
    case OptimizerType::rmsprop:
      return "rmsprop";
    case OptimizerType::adadelta:
      return "adadelta";
  }
  return "?";
}
const char* to_string(KernelMode m) {
  switch (m) {
    case KernelMode::deterministic:
      return "deterministic";
    case KernelMode::nondeterministic:
      return "nondeterministic";
    case KernelMode::autotune:
      return "autotune";
    case KernelMode::batch_invariant:
      return "batch_invariant";
  }
  return "?";
}
namespace {

// The row of the op table (core/op_table.h) whose "determinism.ops" key names each ReducingOp (the
// losses share one key, "loss").
OpId table_row(ReducingOp op) {
  switch (op) {
    case ReducingOp::conv2d_backward_filter:
      return OpId::conv2d_backward_filter;
    case ReducingOp::conv2d_backward_bias:
      return OpId::conv2d_backward_bias;
    case ReducingOp::conv2d_backward_data:
      return OpId::conv2d_backward_data;
    case ReducingOp::dense_backward_weight:
      return OpId::dense_backward_weight;
    case ReducingOp::dense_backward_bias:
      return OpId::dense_backward_bias;
    case ReducingOp::dense_backward_data:
      return OpId::dense_backward_data;
    case ReducingOp::maxpool2d_backward:
      return OpId::maxpool2d_backward;
    case ReducingOp::loss:
      return OpId::softmax_cross_entropy;
    case ReducingOp::batchnorm_forward_training:
      return OpId::batchnorm_forward_training;
    case ReducingOp::batchnorm_backward:
      return OpId::batchnorm_backward;
  }
  return OpId::softmax_cross_entropy;
}

}  // namespace

const char* to_string(ReducingOp op) {
  // The table's names are string literals, so their views end in a NUL.
  return op_info(table_row(op)).spec_key.data();
}

std::optional<KernelMode> kernel_mode_from_string(std::string_view s) {
  if (s == "deterministic") return KernelMode::deterministic;
  if (s == "nondeterministic") return KernelMode::nondeterministic;
  if (s == "autotune") return KernelMode::autotune;
  if (s == "batch_invariant") return KernelMode::batch_invariant;
  return std::nullopt;
}

std::optional<Device> device_from_string(std::string_view s) {
  for (Device d : {Device::auto_select, Device::cpu, Device::cuda}) {
    if (s == to_string(d)) return d;
  }
  return std::nullopt;
}

std::optional<ReducingOp> reducing_op_from_string(std::string_view s) {
  for (int i = 0; i < kReducingOpCount; ++i) {
    auto op = static_cast<ReducingOp>(i);
    if (s == to_string(op)) return op;
  }
  return std::nullopt;
}

}  // namespace ra::spec
