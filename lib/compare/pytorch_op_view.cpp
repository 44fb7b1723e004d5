// PyTorch's records of a step read as the engine's ops (compare/op_families.h pytorch_view): the
// reader's lookups, the forward's families and the view (compare/pytorch_op_reader.h); the
// backward's: compare/pytorch_op_backward.cpp.
#include <algorithm>

#include "compare/pytorch_op_reader.h"

namespace ra::compare {
namespace op_view {

const Names kConvolutions = {"convolution",        "_convolution",      "conv2d",
                             "mkldnn_convolution", "cudnn_convolution", "_slow_conv2d_forward",
                             "thnn_conv2d"};
const Names kActivations = {"relu", "tanh", "sigmoid"};  // the engine's (backend/modes.h)
const Names kActivationBackwards = {"threshold_backward", "tanh_backward", "sigmoid_backward"};
const Names kTransposes = {"t", "transpose", "permute", "numpy_T"};

bool named_one_of(const OpRecord& r, Names names) {
  const std::string_view base = aten_base_name(r.op);
  return std::find(names.begin(), names.end(), base) != names.end();
}

std::size_t elements_of(const std::string& type) {
  const std::size_t open = type.find('[');
  if (open == std::string::npos || type.back() != ']') return 0;
  std::size_t count = 1, dim = 0;
  for (std::size_t k = open + 1; k < type.size(); ++k) {
    const char c = type[k];
    if (c >= '0' && c <= '9') {
      dim = dim * 10 + static_cast<std::size_t>(c - '0');
    } else if (c == ',' || c == ']') {
      count *= dim;
      dim = 0;
    }
  }
  return count;
}

PytorchReader::PytorchReader(const std::vector<OpRecord>& records, std::set<std::string> gated)
    : records_(records), used_(records.size(), false), gated_(std::move(gated)) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    for (const Digest128& d : records[i].out) producers_[d].push_back(i);
    if (const std::vector<Value> in = inputs(i); !in.empty())
      readers_[in.front().digest].push_back(i);
  }
}

std::vector<Value> PytorchReader::inputs(std::size_t i) const {
  std::vector<Value> out;
  const OpRecord& r = records_[i];
  for (std::size_t k = 0; k < r.in.size(); ++k) {
    const std::string type = k < r.in_types.size() ? r.in_types[k] : "";
    if (type != "args" && type != "generator" && type != "value") out.push_back({r.in[k], type});
  }
  return out;
}

Value PytorchReader::output(std::size_t i, std::size_t k) const {
  const OpRecord& r = records_[i];
  return {r.out.at(k), k < r.out_types.size() ? r.out_types[k] : ""};
}

std::optional<std::size_t> PytorchReader::producer(std::size_t before, const Digest128& d) const {
  const auto it = producers_.find(d);
  if (it == producers_.end()) return std::nullopt;
  auto at = std::lower_bound(it->second.begin(), it->second.end(), before);
  while (at != it->second.begin()) {
    const OpRecord& r = records_[*--at];
    if (std::find(r.in.begin(), r.in.end(), d) == r.in.end()) return *at;
  }
  return std::nullopt;
}

std::optional<std::size_t> PytorchReader::reader(std::size_t after, const Digest128& d, Names names,
                                                 const std::string& layer) const {
  const auto it = readers_.find(d);
  if (it == readers_.end()) return std::nullopt;
  for (std::size_t j : it->second) {
    if (j <= after || used_[j] || !named_one_of(records_[j], names)) continue;
    if (layer.empty() || records_[j].layer == layer) return j;
  }
  return std::nullopt;
}

Value PytorchReader::untransposed(std::size_t at, const Value& v,
                                  std::vector<std::size_t>& run) const {
  const std::optional<std::size_t> t = transpose_before(at, v);
  if (!t) return v;
  run.push_back(*t);
  return inputs(*t).front();
}

bool PytorchReader::reads_as(std::size_t at, const Value& v, const Digest128& target,
                             std::vector<std::size_t>& run) const {
  const std::optional<std::size_t> t = transpose_before(at, v);
  if (v.digest != target && (!t || inputs(*t).front().digest != target)) return false;
  if (t) run.push_back(*t);
  return true;
}

std::optional<std::size_t> PytorchReader::transpose_before(std::size_t at, const Value& v) const {
  const std::optional<std::size_t> p = producer(at, v.digest);
  if (!p || used_[*p] || !named_one_of(records_[*p], kTransposes) || inputs(*p).empty())
    return std::nullopt;
  return p;
}

std::optional<std::size_t> PytorchReader::gate_after(std::size_t i, const Value& dx,
                                                     const std::string& layer) const {
  if (!gated_.count(layer)) return std::nullopt;
  const std::optional<std::size_t> gate = reader(i, dx.digest, kActivationBackwards);
  if (!gate || inputs(*gate).size() < 2 || records_[*gate].out.empty()) return std::nullopt;
  return gate;
}

void PytorchReader::add(std::size_t position, const std::string& op, const std::string& layer,
                        const std::vector<Value>& in, const std::vector<Value>& out,
                        std::vector<std::size_t> run, std::size_t outputs_of,
                        std::vector<std::size_t> outputs) {
  std::sort(run.begin(), run.end());
  run.erase(std::unique(run.begin(), run.end()), run.end());
  for (std::size_t r : run) used_[r] = true;
  if (run.size() > 1) ++fused_;
  OpRecord record{op, layer, "", "", {}, {}};
  for (const Value& v : in) {
    record.in.push_back(v.digest);
    record.in_types.push_back(v.type);
  }
  for (const Value& v : out) {
    record.out.push_back(v.digest);
    record.out_types.push_back(v.type);
  }
  pieces_.push_back(
      {position, std::move(record), {std::move(run), outputs_of, std::move(outputs)}});
}

bool PytorchReader::conv_forward(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  if (in.size() < 2 || records_[i].out.empty()) return false;
  const std::string& layer = records_[i].layer;
  std::vector<std::size_t> run = {i};
  std::size_t last = i;
  Value y = output(i, 0);
  if (const auto act = reader(i, y.digest, kActivations, layer)) {
    run.push_back(last = *act);
    y = output(*act, 0);
  }
  LayerForward& f = forward_[layer] = {false, in[0], in[1], std::nullopt};
  std::vector<Value> engine_in = {f.x, f.weight};
  if (in.size() > 2) engine_in.push_back(*(f.bias = in[2]));
  add(i, "conv2d.forward", layer, engine_in, {y}, run, last, {0});
  return true;
}

// addmm(bias, x, weight.t()), linear(x, weight, bias), or mm(x, weight.t()) then add(bias).
bool PytorchReader::dense_forward(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  const std::string_view base = aten_base_name(records_[i].op);
  const std::string& layer = records_[i].layer;
  std::vector<std::size_t> run = {i};
  std::size_t last = i;
  LayerForward f{true, {}, {}, std::nullopt};
  Value y = records_[i].out.empty() ? Value{} : output(i, 0);
  if (base == "addmm" && in.size() == 3) {
    f = {true, in[1], untransposed(i, in[2], run), in[0]};
  } else if (base == "linear" && in.size() >= 2) {
    f = {true, in[0], in[1], in.size() > 2 ? std::optional(in[2]) : std::nullopt};
  } else if (base == "mm" && in.size() == 2) {
    f = {true, in[0], untransposed(i, in[1], run), std::nullopt};
    if (const auto add = reader(i, y.digest, {"add"}, layer); add && inputs(*add).size() == 2) {
      f.bias = inputs(*add)[1];
      run.push_back(last = *add);
      y = output(*add, 0);
    }
  } else {
    return false;
  }
  if (records_[i].out.empty()) return false;
  if (const auto act = reader(last, y.digest, kActivations, layer)) {
    run.push_back(last = *act);
    y = output(*act, 0);
  }
  forward_[layer] = f;
  std::vector<Value> engine_in = {f.x, f.weight};
  if (f.bias) engine_in.push_back(*f.bias);
  add(i, "dense.forward", layer, engine_in, {y}, run, last, {0});
  return true;
}

// _log_softmax, then nll_loss_forward reading it: the loss of the logits.
bool PytorchReader::loss_forward(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  if (in.empty() || records_[i].out.empty()) return false;
  const auto nll = reader(i, records_[i].out[0], {"nll_loss_forward", "nll_loss", "nll_loss_nd"});
  if (!nll || records_[*nll].out.empty()) return false;
  add(i, "softmax_cross_entropy", records_[i].layer, {in[0]}, {output(*nll, 0)}, {i, *nll}, *nll,
      {0});
  return true;
}

// nll_loss_backward, then _log_softmax_backward_data reading it: the logits' gradient. Its input
// is the logits the log-softmax read (nll_loss_backward reads the log-softmax's output).
bool PytorchReader::loss_gradient(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  if (in.size() < 2 || records_[i].out.empty()) return false;
  const std::optional<std::size_t> softmax = producer(i, in[1].digest);
  if (!softmax || !named_one_of(records_[*softmax], {"_log_softmax", "log_softmax"})) return false;
  const auto back =
      reader(i, records_[i].out[0], {"_log_softmax_backward_data", "log_softmax_backward_data"});
  if (!back || records_[*back].out.empty() || inputs(*softmax).empty()) return false;
  add(i, "softmax_cross_entropy.gradient", records_[i].layer, {inputs(*softmax)[0]},
      {output(*back, 0)}, {i, *back}, *back, {0});
  return true;
}

// Record i as the anchor of a family's run, if it is one.
bool PytorchReader::read_at(std::size_t i) {
  const OpRecord& r = records_[i];
  const std::string_view base = aten_base_name(r.op);
  if (named_one_of(r, kConvolutions)) return conv_forward(i);
  if (base == "convolution_backward") return conv_backward(i);
  if (base == "mm") return forward_.count(r.layer) ? dense_backward(i) : dense_forward(i);
  if (base == "addmm" || base == "linear") return dense_forward(i);
  if (base == "sum") return dense_bias_backward(i);
  if (base == "max_pool2d_with_indices" || base == "max_pool2d") {
    if (inputs(i).empty() || r.out.empty()) return false;
    add(i, "maxpool2d.forward", r.layer, {inputs(i)[0]}, {output(i, 0)}, {i}, i, {0});
    return true;
  }
  if (base == "max_pool2d_with_indices_backward") return pool_backward(i);
  if (base == "_log_softmax" || base == "log_softmax") return loss_forward(i);
  if (base == "nll_loss_backward") return loss_gradient(i);
  if (named_one_of(r, kActivationBackwards)) {  // one the next layer's op did not take
    const std::vector<Value> in = inputs(i);
    if (in.size() < 2 || r.out.empty()) return false;
    add(i, "activation.backward", r.layer, {in[1], in[0]}, {output(i, 0)}, {i}, i, {0});
    return true;
  }
  return false;
}

// How many records are left out with record i, read into no op, because it only passes a value
// on: its outputs are among its inputs (detach, view, a reshape), or it is a transpose that
// another transposes back (both left out). 0: it does not.
std::size_t PytorchReader::passes_on(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  const OpRecord& r = records_[i];
  if (r.out.empty() || in.empty()) return 0;
  const bool among_inputs = std::all_of(r.out.begin(), r.out.end(), [&](const Digest128& d) {
    return std::any_of(in.begin(), in.end(), [&](const Value& v) { return v.digest == d; });
  });
  if (among_inputs) return 1;
  if (!named_one_of(r, kTransposes)) return 0;
  const std::optional<std::size_t> back = reader(i, r.out[0], kTransposes);
  if (!back || records_[*back].out.empty() || records_[*back].out[0] != in[0].digest) return 0;
  used_[*back] = true;
  return 2;
}

// The backward ops of one layer in the engine's order (OpFamily::rank): PyTorch computes a dense
// layer's input gradient first, the engine last; they are independent of each other.
std::vector<PytorchReader::Piece> PytorchReader::in_engine_order(std::vector<Piece> pieces) const {
  const auto rank = [](const Piece& p) {
    const OpFamily* f = family_of(p.op.op);
    return f == nullptr ? std::size_t{0} : f->rank;
  };
  for (std::size_t k = 0; k < pieces.size();) {
    std::size_t end = k;
    while (end < pieces.size() && rank(pieces[end]) > 0 &&
           pieces[end].op.layer == pieces[k].op.layer)
      ++end;
    if (end == k) {
      ++k;
      continue;
    }
    std::vector<Piece> unit(pieces.begin() + static_cast<std::ptrdiff_t>(k),
                            pieces.begin() + static_cast<std::ptrdiff_t>(end));
    std::stable_sort(unit.begin(), unit.end(),
                     [&](const Piece& a, const Piece& b) { return rank(a) < rank(b); });
    for (std::size_t u = 0; u < unit.size(); ++u) {
      unit[u].position = pieces[k + u].position;
      pieces[k + u] = std::move(unit[u]);
    }
    k = end;
  }
  return pieces;
}

StepView PytorchReader::read() {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (!used_[i]) read_at(i);
  }
  optimizer_updates();
  StepView view;
  std::vector<Piece> all = in_engine_order(pieces_);
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (used_[i]) continue;
    if (const std::size_t left_out = passes_on(i)) {
      view.left_out += left_out;
      continue;
    }
    std::vector<std::size_t> outputs(records_[i].out.size());
    for (std::size_t p = 0; p < outputs.size(); ++p) outputs[p] = p;
    all.push_back({i, records_[i], {{i}, i, std::move(outputs)}});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Piece& a, const Piece& b) { return a.position < b.position; });
  for (Piece& p : all) {
    view.ops.push_back(std::move(p.op));
    view.sources.push_back(std::move(p.source));
  }
  view.fused = fused_;
  return view;
}

}  // namespace op_view

StepView pytorch_view(const std::vector<trace::OpRecord>& records,
                      const std::vector<trace::OpRecord>& engine) {
  std::set<std::string> gated;
  for (const trace::OpRecord& r : engine) {
    if ((r.op == "conv2d.backward_data" && r.in.size() == 3) ||
        (r.op == "maxpool2d.backward" && r.in.size() == 3))
      gated.insert(r.layer);
  }
  return op_view::PytorchReader(records, std::move(gated)).read();
}

}  // namespace ra::compare
