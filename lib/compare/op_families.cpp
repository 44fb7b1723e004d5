// The table of op families and the engine's records as the alignment reads them
// (compare/op_families.h); PyTorch's: compare/pytorch_op_view.cpp.
#include "compare/op_families.h"

#include <algorithm>
#include <unordered_set>

namespace ra::compare {
namespace {

// The record with only the inputs and outputs at `inputs` and `outputs` (positions it lacks
// skipped), its types with them where it has any.
trace::OpRecord projected(const trace::OpRecord& r, std::string op,
                          const std::vector<std::size_t>& inputs,
                          const std::vector<std::size_t>& outputs, std::vector<std::size_t>& kept) {
  trace::OpRecord out{std::move(op), r.layer, r.mode, r.ledger_key, {}, {}};
  out.algorithm = r.algorithm;
  out.algorithm_deterministic = r.algorithm_deterministic;
  for (std::size_t p : inputs) {
    if (p >= r.in.size()) continue;
    out.in.push_back(r.in[p]);
    if (p < r.in_types.size()) out.in_types.push_back(r.in_types[p]);
  }
  for (std::size_t p : outputs) {
    if (p >= r.out.size()) continue;
    out.out.push_back(r.out[p]);
    kept.push_back(p);
    if (p < r.out_types.size()) out.out_types.push_back(r.out_types[p]);
  }
  return out;
}

void add_as_is(const std::vector<trace::OpRecord>& records, std::size_t i, StepView& view) {
  std::vector<std::size_t> outputs(records[i].out.size());
  for (std::size_t p = 0; p < outputs.size(); ++p) outputs[p] = p;
  view.ops.push_back(records[i]);
  view.sources.push_back({{i}, i, std::move(outputs)});
}

}  // namespace

const std::vector<OpFamily>& op_families() {
  // The engine's positions: docs/trace-format.md, "Op records". Ranks: the engine runs a layer's
  // backward as its activation's backward, then weight, bias, input gradient (lib/nn/layers.cpp).
  static const std::vector<OpFamily> table = {
      {"conv2d.forward",
       "convolution (or _convolution, mkldnn_convolution, cudnn_convolution), then the "
       "activation that reads its output (relu, tanh, sigmoid)",
       {0, 1, 2},
       {0},
       0},
      {"dense.forward",
       "addmm, its weight read through t (or linear; or mm, then add), then the activation "
       "that reads its output",
       {0, 1, 2},
       {0},
       0},
      {"maxpool2d.forward", "max_pool2d_with_indices: its output, not the indices", {0}, {0}, 0},
      {"softmax_cross_entropy", "_log_softmax, then nll_loss_forward: the loss", {0}, {0}, 0},
      {"softmax_cross_entropy.gradient",
       "nll_loss_backward, then _log_softmax_backward_data: the logits' gradient",
       {0},
       {1},
       0},
      {"activation.backward",
       "threshold_backward (tanh_backward, sigmoid_backward) the engine does not apply in the "
       "next layer's backward",
       {0, 1},
       {0},
       1},
      {"conv2d.backward_filter", "convolution_backward's weight gradient", {0, 1}, {0}, 2},
      {"dense.backward_weight",
       "mm of the transposed output gradient and the layer's input",
       {0, 1},
       {0},
       2},
      {"conv2d.backward_bias", "convolution_backward's bias gradient", {0}, {0}, 3},
      {"dense.backward_bias", "sum of the output gradient over the batch", {0}, {0}, 3},
      {"conv2d.backward_data",
       "convolution_backward's input gradient, then the threshold_backward the engine applies "
       "in it (where its record has the gate input)",
       {0, 1, 2},
       {0},
       4},
      {"dense.backward_data", "mm of the output gradient and the weight", {0, 1}, {0}, 4},
      {"optimizer.update",
       "the optimizer's ops that read the parameter's gradient (or a value made from it), to the "
       "last, which writes the parameter: the new value, not the optimizer's state",
       {0, 1},
       {0},
       0},
      {"maxpool2d.backward",
       "max_pool2d_with_indices_backward, then the threshold_backward the engine applies in it "
       "(where its record has the gate input): the output gradient in, not the indices",
       {0},
       {0},
       4},
  };
  return table;
}

const OpFamily* family_of(std::string_view engine_op) {
  for (const OpFamily& f : op_families()) {
    if (f.engine_op == engine_op) return &f;
  }
  return nullptr;
}

std::string_view aten_base_name(std::string_view op) {
  constexpr std::string_view kPrefix = "aten.";
  if (!op.starts_with(kPrefix)) return op;
  op.remove_prefix(kPrefix.size());
  op = op.substr(0, op.find('.'));
  if (op.size() > 1 && op.ends_with('_') && !op.ends_with("__")) op.remove_suffix(1);
  return op;
}

StepView engine_view(const std::vector<trace::OpRecord>& records) {
  StepView view;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const trace::OpRecord& r = records[i];
    const OpFamily* family = family_of(r.op);
    if (family == nullptr) {
      add_as_is(records, i, view);
      continue;
    }
    std::vector<std::string> ops = {r.op};
    if (r.op == "softmax_cross_entropy") ops.push_back("softmax_cross_entropy.gradient");
    for (const std::string& op : ops) {
      const OpFamily& f = *family_of(op);
      ViewedOp source{{i}, i, {}};
      view.ops.push_back(projected(r, op, f.inputs, f.outputs, source.outputs));
      view.sources.push_back(std::move(source));
    }
  }
  return view;
}

std::vector<std::string> engine_layers_missing(const std::vector<trace::OpRecord>& engine,
                                               const std::vector<trace::OpRecord>& pytorch) {
  std::unordered_set<std::string> named;
  for (const trace::OpRecord& r : pytorch) named.insert(r.layer);
  std::vector<std::string> missing;
  for (const trace::OpRecord& r : engine) {
    const bool model_layer = r.op != "softmax_cross_entropy" && r.op != "optimizer.update";
    if (family_of(r.op) == nullptr || !model_layer || named.count(r.layer)) continue;
    if (std::find(missing.begin(), missing.end(), r.layer) == missing.end())
      missing.push_back(r.layer);
  }
  return missing;
}

}  // namespace ra::compare
