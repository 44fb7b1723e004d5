// PyTorch's records of a step read as the engine's ops: the backward's families and the
// optimizer's updates (compare/pytorch_op_reader.h).
#include <algorithm>
#include <unordered_set>

#include "compare/pytorch_op_reader.h"

namespace ra::compare::op_view {

// convolution_backward(dy, x, weight) -> (dx, dweight, dbias), those its output mask asked for:
// the engine's backward_filter, backward_bias and backward_data, in that order.
bool PytorchReader::conv_backward(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  const OpRecord& r = records_[i];
  if (in.size() < 3 || r.out.empty()) return false;
  const Value &dy = in[0], &x = in[1], &weight = in[2];
  std::optional<std::size_t> dx, dw, db;
  if (r.out.size() == 3) {
    dx = 0, dw = 1, db = 2;
  } else {  // the types tell which were asked for (the first layer has no dx)
    for (std::size_t k = 0; k < r.out.size(); ++k) {
      const std::string type = output(i, k).type;
      std::optional<std::size_t>& slot = !dw && type == weight.type ? dw
                                         : !dx && type == x.type    ? dx
                                                                    : db;
      if (!slot) slot = k;
    }
  }
  if (dw) add(i, "conv2d.backward_filter", r.layer, {x, dy}, {output(i, *dw)}, {i}, i, {*dw});
  if (db) add(i, "conv2d.backward_bias", r.layer, {dy}, {output(i, *db)}, {i}, i, {*db});
  if (dx) {
    const Value grad = output(i, *dx);
    if (const std::optional<std::size_t> gate = gate_after(i, grad, r.layer)) {
      add(i, "conv2d.backward_data", r.layer, {dy, weight, inputs(*gate)[1]}, {output(*gate, 0)},
          {i, *gate}, *gate, {0});
    } else {
      add(i, "conv2d.backward_data", r.layer, {dy, weight}, {grad}, {i}, i, {*dx});
    }
  }
  return true;
}

// An mm in the backward of a dense layer: mm(dy, weight) is its input gradient, mm(dy.t(), x) (or
// mm(x.t(), dy), then transposed) its weight gradient, told apart by what they read of the
// layer's forward.
bool PytorchReader::dense_backward(std::size_t i) {
  const auto f = forward_.find(records_[i].layer);
  const std::vector<Value> in = inputs(i);
  if (f == forward_.end() || !f->second.dense || in.size() != 2 || records_[i].out.empty())
    return false;
  const LayerForward& layer = f->second;
  const std::string& name = records_[i].layer;
  std::vector<std::size_t> run = {i};
  if (reads_as(i, in[1], layer.weight.digest, run)) {
    add(i, "dense.backward_data", name, {in[0], layer.weight}, {output(i, 0)}, run, i, {0});
    return true;
  }
  Value dy;
  if (reads_as(i, in[1], layer.x.digest, run)) {  // mm(dy.t(), x): [out, in]
    dy = untransposed(i, in[0], run);
  } else if (reads_as(i, in[0], layer.x.digest, run)) {  // mm(x.t(), dy): [in, out]
    dy = in[1];
  } else {
    return false;
  }
  std::size_t last = i;
  Value dw = output(i, 0);
  if (dw.type != layer.weight.type) {  // the weight's gradient is its transpose
    const std::optional<std::size_t> t = reader(i, dw.digest, kTransposes, name);
    if (!t || records_[*t].out.empty() || output(*t, 0).type != layer.weight.type) return false;
    run.push_back(last = *t);
    dw = output(*t, 0);
  }
  add(i, "dense.backward_weight", name, {layer.x, dy}, {dw}, run, last, {0});
  return true;
}

// A sum to the bias's shape in the backward of a dense layer: its bias gradient.
bool PytorchReader::dense_bias_backward(std::size_t i) {
  const auto f = forward_.find(records_[i].layer);
  const std::vector<Value> in = inputs(i);
  if (f == forward_.end() || !f->second.dense || !f->second.bias || in.empty() ||
      records_[i].out.empty())
    return false;
  const Value db = output(i, 0);
  if (elements_of(db.type) == 0 || elements_of(db.type) != elements_of(f->second.bias->type))
    return false;
  add(i, "dense.backward_bias", records_[i].layer, {in[0]}, {db}, {i}, i, {0});
  return true;
}

// max_pool2d_with_indices_backward(dy, x, indices), with the activation's backward the engine
// applies in it: the output gradient in (the engine's argmax and gate are its own encodings).
bool PytorchReader::pool_backward(std::size_t i) {
  const std::vector<Value> in = inputs(i);
  const OpRecord& r = records_[i];
  if (in.empty() || r.out.empty()) return false;
  const Value dx = output(i, 0);
  if (const std::optional<std::size_t> gate = gate_after(i, dx, r.layer)) {
    add(i, "maxpool2d.backward", r.layer, {in[0]}, {output(*gate, 0)}, {i, *gate}, *gate, {0});
  } else {
    add(i, "maxpool2d.backward", r.layer, {in[0]}, {dx}, {i}, i, {0});
  }
  return true;
}

// The optimizer's update of a parameter, from the record after `from` (the backward op that made
// its gradient): the optimizer's records that read the gradient, or a value made from it, up to
// the last of them that writes the parameter in place (PyTorch's single-tensor optimizers update
// the parameter last, after their state). Only the parameter's new value is compared: the two
// programs keep their optimizer state in their own ways.
void PytorchReader::update_of(const std::string& name, const Value& value, const Value& gradient,
                              std::size_t from) {
  std::unordered_set<Digest128, ValueDigestHash> made = {gradient.digest};
  std::vector<std::size_t> run;
  std::optional<std::size_t> write;
  for (std::size_t j = from + 1; j < records_.size(); ++j) {
    const std::vector<Value> in = inputs(j);
    const bool reads =
        std::any_of(in.begin(), in.end(), [&](const Value& v) { return made.count(v.digest) > 0; });
    if (used_[j] || !reads) continue;
    made.insert(records_[j].out.begin(), records_[j].out.end());
    if (records_[j].layer != "optimizer") continue;  // the gradient's accumulation, backward
    run.push_back(j);
    if (in.front().digest == value.digest && !records_[j].out.empty() &&
        records_[j].out[0] != value.digest)
      write = j;
  }
  if (!write) return;
  run.erase(std::upper_bound(run.begin(), run.end(), *write), run.end());
  with_feeding_records(run);
  add(*write, "optimizer.update", name, {value, gradient}, {output(*write, 0)}, run, *write, {0});
}

// `run` (in order) with the optimizer's records between its first and last whose values it reads,
// those alone (a state's square root a step divides by).
void PytorchReader::with_feeding_records(std::vector<std::size_t>& run) const {
  std::unordered_set<Digest128, ValueDigestHash> needed;
  std::vector<std::size_t> feeding;
  for (std::size_t j = run.back() + 1; j-- > run.front();) {
    const bool in_run = std::binary_search(run.begin(), run.end(), j);
    const OpRecord& r = records_[j];
    const bool feeds = !in_run && !used_[j] && r.layer == "optimizer" &&
                       std::any_of(r.out.begin(), r.out.end(),
                                   [&](const Digest128& d) { return needed.count(d) > 0; });
    if (!in_run && !feeds) continue;
    if (feeds) feeding.push_back(j);
    for (const Value& v : inputs(j)) needed.insert(v.digest);
  }
  run.insert(run.end(), feeding.begin(), feeding.end());
  std::sort(run.begin(), run.end());
}

// The updates of the weights and biases whose gradients the backward ops made, named as the
// engine names them ("dense_0.bias").
void PytorchReader::optimizer_updates() {
  const std::vector<Piece> made = pieces_;
  for (const Piece& p : made) {
    const bool weight = p.op.op == "conv2d.backward_filter" || p.op.op == "dense.backward_weight";
    const bool bias = p.op.op == "conv2d.backward_bias" || p.op.op == "dense.backward_bias";
    const auto f = forward_.find(p.op.layer);
    if ((!weight && !bias) || f == forward_.end() || p.op.out.empty()) continue;
    if (bias && !f->second.bias) continue;
    update_of(p.op.layer + (weight ? ".weight" : ".bias"),
              weight ? f->second.weight : *f->second.bias,
              {p.op.out[0], p.op.out_types.empty() ? "" : p.op.out_types[0]}, p.source.outputs_of);
  }
}

}  // namespace ra::compare::op_view
