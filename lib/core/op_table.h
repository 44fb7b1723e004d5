#pragma once
// The ops of a training step as data: one row per op of backend::Ops (backend/ops.h) and per
// pseudo-op that a trace records. Every reader takes its names from here, so that no other file
// spells an op: the op recorder (record/op_recorder.h) writes `trace_name` into each op record and
// the digests in the order of `inputs` and `outputs`; the trace's readers name those positions
// (trace/op_names.h); the spec keys its per-op kernel modes by `spec_key` (spec/names.cpp); bench's
// timer (train/op_timer.h) reports `timing_label`. docs/ops.md lists what else an op touches.
//
// Two spellings per op, both kept because files already carry them: traces and specs write the
// dotted "conv2d.backward_filter" (docs/trace-format.md, docs/spec.md); bench's tables (text and
// JSON, docs/performance.md) write the Ops method's name, "conv2d_backward_filter".
//
// The rows are in bench's report order (forward ops first); core because every module that reads
// them (spec and backend included, which share no other module) may include core.
#include <array>
#include <cstddef>
#include <string_view>

namespace ra {

enum class OpId {
  batch,
  conv2d_forward,
  conv2d_forward_maxpool,
  conv2d_backward_data,
  conv2d_backward_filter,
  conv2d_backward_bias,
  conv2d_backward_filter_bias,
  conv2d_backward_maxpool,
  dense_forward,
  dense_backward_data,
  dense_backward_weight,
  dense_backward_bias,
  maxpool2d_forward,
  maxpool2d_backward,
  batchnorm_forward_training,
  batchnorm_forward_training_activation,
  batchnorm_forward_inference,
  batchnorm_backward,
  batchnorm_backward_add,
  global_avgpool_forward,
  global_avgpool_backward,
  residual_add,
  activation_forward,
  activation_backward,
  dropout_mask,
  dropout_forward,
  dropout_backward,
  softmax_cross_entropy,
  mean_squared_error,
  optimizer_update,
  digest,
};

struct OpInfo {
  OpId id;
  // The op records' "op"; "" for an op never recorded whole (a composite, recorded as its parts,
  // and the digests, which are not a step's computation).
  std::string_view trace_name;
  // bench's "op"; "" for a pseudo-op (no Ops call: the batch assembly, the dropout's mask).
  std::string_view timing_label;
  // The key of the spec's "determinism.ops" that sets its kernel mode; "" for none of its own.
  std::string_view spec_key;
  // Takes a KernelMode: it sums many terms, in an order the mode decides (docs/determinism.md).
  bool reduces = false;
  // The recorded inputs and outputs in the order of the record's digests; optional ones (a bias,
  // a relu gate, an optimizer state) are recorded only when present and come last.
  std::array<std::string_view, 6> inputs{};
  std::array<std::string_view, 5> outputs{};
};

// One row per op: id, trace name, timing label, spec key, reduces, inputs, outputs.
// clang-format off
inline constexpr std::array kOpTable{
    OpInfo{OpId::batch, "batch", "", "", false, {}, {"sample indices", "images", "labels"}},
    OpInfo{OpId::conv2d_forward, "conv2d.forward", "conv2d_forward", "", false,
           {"x", "weight", "bias"}, {"y"}},
    OpInfo{OpId::conv2d_forward_maxpool, "", "conv2d_forward_maxpool", "", false, {}, {}},
    OpInfo{OpId::conv2d_backward_data, "conv2d.backward_data", "conv2d_backward_data",
           "conv2d.backward_data", true, {"dy", "weight", "relu gate"}, {"dx"}},
    OpInfo{OpId::conv2d_backward_filter, "conv2d.backward_filter", "conv2d_backward_filter",
           "conv2d.backward_filter", true, {"x", "dy"}, {"dw"}},
    OpInfo{OpId::conv2d_backward_bias, "conv2d.backward_bias", "conv2d_backward_bias",
           "conv2d.backward_bias", true, {"dy"}, {"db"}},
    // The composites take the modes of their parts; bench files them under the filter's.
    OpInfo{OpId::conv2d_backward_filter_bias, "", "conv2d_backward_filter_bias", "", true, {}, {}},
    OpInfo{OpId::conv2d_backward_maxpool, "", "conv2d_backward_maxpool", "", true, {}, {}},
    OpInfo{OpId::dense_forward, "dense.forward", "dense_forward", "", false,
           {"x", "weight", "bias"}, {"y"}},
    OpInfo{OpId::dense_backward_data, "dense.backward_data", "dense_backward_data",
           "dense.backward_data", true, {"dy", "weight"}, {"dx"}},
    OpInfo{OpId::dense_backward_weight, "dense.backward_weight", "dense_backward_weight",
           "dense.backward_weight", true, {"x", "dy"}, {"dw"}},
    OpInfo{OpId::dense_backward_bias, "dense.backward_bias", "dense_backward_bias",
           "dense.backward_bias", true, {"dy"}, {"db"}},
    OpInfo{OpId::maxpool2d_forward, "maxpool2d.forward", "maxpool2d_forward", "", false,
           {"x"}, {"y", "argmax"}},
    OpInfo{OpId::maxpool2d_backward, "maxpool2d.backward", "maxpool2d_backward",
           "maxpool2d.backward", true, {"dy", "argmax", "relu gate"}, {"dx"}},
    // The running statistics are read and updated in place: inputs and outputs both.
    OpInfo{OpId::batchnorm_forward_training, "batchnorm.forward_training",
           "batchnorm_forward_training", "batchnorm.forward_training", true,
           {"x", "gamma", "beta", "running mean", "running variance"},
           {"y", "saved mean", "saved inverse std", "running mean", "running variance"}},
    // A composite (batchnorm, then its activation), recorded as its parts, filed under its mode.
    OpInfo{OpId::batchnorm_forward_training_activation, "",
           "batchnorm_forward_training_activation", "", true, {}, {}},
    OpInfo{OpId::batchnorm_forward_inference, "batchnorm.forward_inference",
           "batchnorm_forward_inference", "", false,
           {"x", "gamma", "beta", "running mean", "running variance"}, {"y"}},
    OpInfo{OpId::batchnorm_backward, "batchnorm.backward", "batchnorm_backward",
           "batchnorm.backward", true,
           {"x", "dy", "gamma", "saved mean", "saved inverse std"}, {"dx", "dgamma", "dbeta"}},
    // A composite (batchnorm backward, then a residual add into its dx), recorded as its parts.
    OpInfo{OpId::batchnorm_backward_add, "", "batchnorm_backward_add", "", true, {}, {}},
    OpInfo{OpId::global_avgpool_forward, "global_avgpool.forward", "global_avgpool_forward", "",
           false, {"x"}, {"y"}},
    OpInfo{OpId::global_avgpool_backward, "global_avgpool.backward", "global_avgpool_backward", "",
           false, {"dy"}, {"dx"}},
    OpInfo{OpId::residual_add, "residual.add", "residual_add", "", false, {"a", "b"}, {"y"}},
    OpInfo{OpId::activation_forward, "activation.forward", "activation_forward", "", false,
           {"x"}, {"y"}},
    OpInfo{OpId::activation_backward, "activation.backward", "activation_backward", "", false,
           {"y", "dy"}, {"dx"}},
    // A function of the stream alone, recorded from the dropout's call (record/op_recorder.h).
    OpInfo{OpId::dropout_mask, "dropout_mask", "", "", false,
           {"stream (key, step, rate, count)"}, {"mask"}},
    OpInfo{OpId::dropout_forward, "dropout.forward", "dropout_forward", "", false,
           {"x", "mask"}, {"y"}},
    OpInfo{OpId::dropout_backward, "dropout.backward", "dropout_backward", "", false,
           {"mask", "dy"}, {"dx"}},
    // The loss value is a host float, the first output; the gradient is asked for in training.
    OpInfo{OpId::softmax_cross_entropy, "softmax_cross_entropy", "softmax_cross_entropy", "loss",
           true, {"logits", "labels"}, {"loss value", "dlogits"}},
    OpInfo{OpId::mean_squared_error, "mean_squared_error", "mean_squared_error", "loss",
           true, {"prediction", "labels"}, {"loss value", "dprediction"}},
    OpInfo{OpId::optimizer_update, "optimizer.update", "optimizer_update", "", false,
           {"value", "gradient", "state 0", "state 1"}, {"value", "state 0", "state 1"}},
    OpInfo{OpId::digest, "", "digest", "", false, {}, {}},
};
// clang-format on

constexpr const OpInfo& op_info(OpId id) {
  return kOpTable[static_cast<std::size_t>(id)];
}

// The row recorded as `trace_name`, or null (an op of a newer writer, or PyTorch's).
constexpr const OpInfo* find_recorded_op(std::string_view trace_name) {
  for (const OpInfo& op : kOpTable) {
    if (!op.trace_name.empty() && op.trace_name == trace_name) return &op;
  }
  return nullptr;
}

// Each row stands at its id, so op_info is an index.
constexpr bool op_table_in_order() {
  for (std::size_t i = 0; i < kOpTable.size(); ++i) {
    if (static_cast<std::size_t>(kOpTable[i].id) != i) return false;
  }
  return true;
}
static_assert(op_table_in_order(), "kOpTable: each row at the position of its OpId");

}  // namespace ra
