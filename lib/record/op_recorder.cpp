#include "record/op_recorder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include "backend/geometry_key.h"
#include "core/error.h"
#include "trace/op_names.h"

namespace ra::audit {
namespace {

using backend::KernelMode;
using Region = OpRecorder::Region;

std::size_t bytes_of(const Region& r) {
  return static_cast<std::size_t>(r.count) * dtype_bytes(r.dtype);
}

Region f32(const float* data, std::int64_t count) {
  return Region{DType::f32, data, count};
}

// Regions of optional buffers (a bias, a relu gate, an optimizer state) only when present.
void add_if(std::vector<Region>& regions, const float* data, std::int64_t count) {
  if (data != nullptr) regions.push_back(f32(data, count));
}

// Whether two regions share a byte.
bool overlap(const Region& a, const Region& b) {
  if (a.host != b.host) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data);
  const auto* b0 = static_cast<const unsigned char*>(b.data);
  return a0 < b0 + bytes_of(b) && b0 < a0 + bytes_of(a);
}

// The output an op fault flips: the first in backend memory (a loss's gradient, not its value).
std::size_t fault_output(const std::vector<Region>& outputs) {
  std::size_t i = 0;
  while (i < outputs.size() && outputs[i].host) ++i;
  return i;
}

}  // namespace

OpRecorder::OpRecorder(backend::Ops& inner, int digest_threads, std::optional<OpFault> fault)
    : ForwardingOps(inner), pool_(std::max(1, digest_threads)), fault_(std::move(fault)) {}

void OpRecorder::begin_step(std::int64_t step, bool record) {
  // An unfinished step's queue (its records were never taken) is emptied unread.
  if (queued_ > 0) static_cast<void>(ForwardingOps::take_queued_digests());
  queued_ = 0;
  step_ = step;
  recording_ = record;
  records_.clear();
  cache_.clear();
  queue_digests_ = record && !hook_ && !memory().host_accessible() && inner().queues_digests();
}

std::vector<OpRecord> OpRecorder::take_records() {
  recording_ = false;
  resolve_queued();
  return std::move(records_);
}

void OpRecorder::enter_layer(const std::string& name) {
  // "conv+pool" (Ops::enter_layer): the conv's ops are the first layer's, the pool's the second's.
  const auto plus = name.find('+');
  layer_ = name.substr(0, plus);
  pool_layer_ = plus == std::string::npos ? name : name.substr(plus + 1);
  ForwardingOps::enter_layer(name);
}

void OpRecorder::record_batch(const data::Batch& batch) {
  if (!recording_) return;
  const auto start = std::chrono::steady_clock::now();
  OpRecord r;
  r.op = "batch";
  // The batch is assembled on the host whatever the backend: hashed here, not through memory().
  r.out = {ra::digest(std::span<const std::int64_t>(batch.sample_indices)),
           digest_bytes(DType::f32, Shape{static_cast<std::int64_t>(batch.images.size())},
                        batch.images.data(), batch.images.bytes()),
           ra::digest(std::span<const std::int32_t>(batch.labels))};
  records_.push_back(std::move(r));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<unsigned char> OpRecorder::read(const Region& region) {
  std::vector<unsigned char> bytes(bytes_of(region));
  if (region.host) {
    std::memcpy(bytes.data(), region.data, bytes.size());
  } else {
    memory().download(bytes.data(), region.data, bytes.size());
  }
  return bytes;
}

void OpRecorder::write(const Region& region, const std::vector<unsigned char>& bytes) {
  void* target = const_cast<void*>(region.data);
  if (region.host) {
    std::memcpy(target, bytes.data(), bytes.size());
  } else {
    memory().upload(target, bytes.data(), bytes.size());
  }
}

void OpRecorder::record(const char* op, const char* mode, std::string ledger_key,
                        const std::vector<Region>& inputs, const std::vector<Region>& outputs,
                        const std::function<void()>& compute) {
  Open call = open(op, mode, std::move(ledger_key), inputs);
  if (hook_) {
    run_hook(call, inputs, outputs, compute);
  } else {
    compute();
  }
  close(call, outputs);
}

void OpRecorder::run_hook(const Open& call, const std::vector<Region>& inputs,
                          const std::vector<Region>& outputs,
                          const std::function<void()>& compute) {
  // The inputs an output overlaps (an activation or an update in place) are kept, so that every
  // execution starts from the same inputs; the others are only read.
  std::vector<std::pair<Region, std::vector<unsigned char>>> kept;
  for (const Region& in : inputs) {
    const bool overwritten = std::any_of(outputs.begin(), outputs.end(),
                                         [&](const Region& out) { return overlap(in, out); });
    if (overwritten) kept.emplace_back(in, read(in));
  }
  bool first = true;
  Call c;
  c.step = step_;
  c.index = records_.size();
  c.opened = &call.record;
  c.outputs = outputs;
  c.fault_output = fault_output(outputs);
  c.execute = [&] {
    if (!first) {
      for (const auto& [region, bytes] : kept) write(region, bytes);
    }
    first = false;
    compute();
  };
  hook_(c);
}

const std::string& OpRecorder::records_layer(std::string_view op) const {
  return op.starts_with("maxpool2d") ? pool_layer_ : layer_;
}

OpRecorder::Open OpRecorder::open(const char* op, const char* mode, std::string ledger_key,
                                  const std::vector<Region>& inputs) {
  Open call;
  call.started = std::chrono::steady_clock::now();
  call.record.op = op;
  call.record.layer = records_layer(op);
  call.record.mode = mode;
  call.record.ledger_key = std::move(ledger_key);
  call.record.in = digest_regions(inputs);
  seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - call.started).count();
  return call;
}

void OpRecorder::close(Open& call, const std::vector<Region>& outputs) {
  const std::size_t target = fault_output(outputs);
  if (target < outputs.size()) apply_fault(call.record.op, outputs[target]);
  const auto start = std::chrono::steady_clock::now();
  // The op wrote its outputs: their old digests (if any) are stale.
  for (const Region& r : outputs) {
    if (!r.host) cache_.erase(r.data);
  }
  call.record.out = digest_regions(outputs);
  name_algorithm(call.record);
  // A nondeterministic mode, or an algorithm that is not deterministic whatever the mode asked
  // (autotune may choose one): its outcome may not come back in a replay, so it is kept.
  const bool may_vary = call.record.mode == to_string(KernelMode::nondeterministic) ||
                        call.record.algorithm_deterministic == false;
  if (kept_ != nullptr && may_vary) {
    KeptOutputs::Outputs kept;
    for (const Region& r : outputs) {
      kept.bytes.push_back(read(r));
      kept.dtypes.push_back(r.dtype);
    }
    if (!kept_->keep(run_, step_, records_.size(), std::move(kept))) kept_ = nullptr;
  }
  records_.push_back(std::move(call.record));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void OpRecorder::name_algorithm(OpRecord& record) const {
  if (record.ledger_key.empty()) return;
  std::optional<KernelMode> mode;
  for (KernelMode m :
       {KernelMode::deterministic, KernelMode::nondeterministic, KernelMode::autotune}) {
    if (record.mode == to_string(m)) mode = m;
  }
  const std::optional<backend::AlgorithmUsed> used =
      inner().algorithm_used(record.ledger_key, ledger_direction(record.op), mode);
  if (!used) return;
  record.algorithm = used->name;
  record.algorithm_deterministic = used->deterministic;
}

void OpRecorder::apply_fault(const std::string& op, const Region& output) {
  if (!fault_ || fault_applied_ || fault_->step != step_ || fault_->op != op ||
      fault_->layer != records_layer(op)) {
    return;
  }
  if (output.dtype != DType::f32) {
    throw InputError("--inject-fault: " + op + " has no float output to flip a bit of");
  }
  if (fault_->element >= output.count) {
    throw InputError("--inject-fault: element " + std::to_string(fault_->element) +
                     " is outside the output of " + op + " in " + records_layer(op) + " (" +
                     std::to_string(output.count) + " elements)");
  }
  // Through memory(): the output may be in device memory.
  auto* target = static_cast<float*>(const_cast<void*>(output.data)) + fault_->element;
  std::uint32_t bits = 0;
  memory().download(&bits, target, sizeof bits);
  bits ^= std::uint32_t(1) << fault_->bit;
  memory().upload(target, &bits, sizeof bits);
  fault_applied_ = true;
}

// ---- the ops: each forwards, and records when the step is in the window ---------------------

void OpRecorder::conv2d_forward(const backend::ConvGeometry& g, const float* x, const float* w,
                                const float* bias, backend::Activation act, float* y) {
  if (!recording_) return ForwardingOps::conv2d_forward(g, x, w, bias, act, y);
  std::vector<Region> in{f32(x, g.x_size()), f32(w, g.w_size())};
  add_if(in, bias, g.k);
  record("conv2d.forward", "", backend::conv_geometry_key(g), in, {f32(y, g.y_size())},
         [&] { ForwardingOps::conv2d_forward(g, x, w, bias, act, y); });
}

void OpRecorder::conv2d_backward_data(const backend::ConvGeometry& g, const float* dy,
                                      const float* w, const float* relu_gate, float* dx,
                                      KernelMode mode) {
  if (!recording_) return ForwardingOps::conv2d_backward_data(g, dy, w, relu_gate, dx, mode);
  std::vector<Region> in{f32(dy, g.y_size()), f32(w, g.w_size())};
  add_if(in, relu_gate, g.x_size());
  record("conv2d.backward_data", to_string(mode), backend::conv_geometry_key(g), in,
         {f32(dx, g.x_size())},
         [&] { ForwardingOps::conv2d_backward_data(g, dy, w, relu_gate, dx, mode); });
}

void OpRecorder::conv2d_backward_filter(const backend::ConvGeometry& g, const float* x,
                                        const float* dy, float* dw, KernelMode mode) {
  if (!recording_) return ForwardingOps::conv2d_backward_filter(g, x, dy, dw, mode);
  record("conv2d.backward_filter", to_string(mode), backend::conv_geometry_key(g),
         {f32(x, g.x_size()), f32(dy, g.y_size())}, {f32(dw, g.w_size())},
         [&] { ForwardingOps::conv2d_backward_filter(g, x, dy, dw, mode); });
}

void OpRecorder::conv2d_backward_bias(const backend::ConvGeometry& g, const float* dy, float* db,
                                      KernelMode mode) {
  if (!recording_) return ForwardingOps::conv2d_backward_bias(g, dy, db, mode);
  record("conv2d.backward_bias", to_string(mode), backend::conv_geometry_key(g),
         {f32(dy, g.y_size())}, {f32(db, g.k)},
         [&] { ForwardingOps::conv2d_backward_bias(g, dy, db, mode); });
}

void OpRecorder::dense_forward(const backend::DenseGeometry& g, const float* x, const float* w,
                               const float* bias, backend::Activation act, float* y) {
  if (!recording_) return ForwardingOps::dense_forward(g, x, w, bias, act, y);
  std::vector<Region> in{f32(x, std::int64_t(g.n) * g.in), f32(w, std::int64_t(g.out) * g.in)};
  add_if(in, bias, g.out);
  record("dense.forward", "", backend::dense_geometry_key(g), in,
         {f32(y, std::int64_t(g.n) * g.out)},
         [&] { ForwardingOps::dense_forward(g, x, w, bias, act, y); });
}

void OpRecorder::dense_backward_data(const backend::DenseGeometry& g, const float* dy,
                                     const float* w, float* dx, KernelMode mode) {
  if (!recording_) return ForwardingOps::dense_backward_data(g, dy, w, dx, mode);
  record("dense.backward_data", to_string(mode), backend::dense_geometry_key(g),
         {f32(dy, std::int64_t(g.n) * g.out), f32(w, std::int64_t(g.out) * g.in)},
         {f32(dx, std::int64_t(g.n) * g.in)},
         [&] { ForwardingOps::dense_backward_data(g, dy, w, dx, mode); });
}

void OpRecorder::dense_backward_weight(const backend::DenseGeometry& g, const float* x,
                                       const float* dy, float* dw, KernelMode mode) {
  if (!recording_) return ForwardingOps::dense_backward_weight(g, x, dy, dw, mode);
  record("dense.backward_weight", to_string(mode), backend::dense_geometry_key(g),
         {f32(x, std::int64_t(g.n) * g.in), f32(dy, std::int64_t(g.n) * g.out)},
         {f32(dw, std::int64_t(g.out) * g.in)},
         [&] { ForwardingOps::dense_backward_weight(g, x, dy, dw, mode); });
}

void OpRecorder::dense_backward_bias(const backend::DenseGeometry& g, const float* dy, float* db,
                                     KernelMode mode) {
  if (!recording_) return ForwardingOps::dense_backward_bias(g, dy, db, mode);
  record("dense.backward_bias", to_string(mode), backend::dense_geometry_key(g),
         {f32(dy, std::int64_t(g.n) * g.out)}, {f32(db, g.out)},
         [&] { ForwardingOps::dense_backward_bias(g, dy, db, mode); });
}

void OpRecorder::maxpool2d_forward(const backend::PoolGeometry& g, const float* x, float* y,
                                   std::int32_t* argmax) {
  if (!recording_) return ForwardingOps::maxpool2d_forward(g, x, y, argmax);
  record("maxpool2d.forward", "", "", {f32(x, g.x_size())},
         {f32(y, g.y_size()), Region{DType::i32, argmax, g.y_size()}},
         [&] { ForwardingOps::maxpool2d_forward(g, x, y, argmax); });
}

void OpRecorder::maxpool2d_backward(const backend::PoolGeometry& g, const float* dy,
                                    const std::int32_t* argmax, const float* relu_gate, float* dx,
                                    KernelMode mode) {
  if (!recording_) return ForwardingOps::maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode);
  std::vector<Region> in{f32(dy, g.y_size()), Region{DType::i32, argmax, g.y_size()}};
  add_if(in, relu_gate, g.y_size());
  record("maxpool2d.backward", to_string(mode), "", in, {f32(dx, g.x_size())},
         [&] { ForwardingOps::maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode); });
}

void OpRecorder::activation_forward(backend::Activation act, std::int64_t count, const float* x,
                                    float* y) {
  if (!recording_) return ForwardingOps::activation_forward(act, count, x, y);
  record("activation.forward", "", "", {f32(x, count)}, {f32(y, count)},
         [&] { ForwardingOps::activation_forward(act, count, x, y); });
}

void OpRecorder::activation_backward(backend::Activation act, std::int64_t count, const float* y,
                                     const float* dy, float* dx) {
  if (!recording_) return ForwardingOps::activation_backward(act, count, y, dy, dx);
  record("activation.backward", "", "", {f32(y, count), f32(dy, count)}, {f32(dx, count)},
         [&] { ForwardingOps::activation_backward(act, count, y, dy, dx); });
}

void OpRecorder::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                                 rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                                 std::uint8_t* mask) {
  if (!recording_) {
    return ForwardingOps::dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask);
  }
  // The mask is a pseudo-op of its own: a function of (key, draw, threshold, count) only, so a
  // mask that differs while these match is the random stream's fault, not the dropout's. Two
  // records from one call: not shown to a replay hook (the op is deterministic by construction).
  const std::uint64_t params[4] = {std::uint64_t(key.k0) | std::uint64_t(key.k1) << 32, draw,
                                   drop_threshold, static_cast<std::uint64_t>(count)};
  Open mask_call = open("dropout_mask", "", "", {});
  mask_call.record.in = {ra::digest(std::span<const std::int64_t>(
      reinterpret_cast<const std::int64_t*>(params), std::size(params)))};
  Open call = open("dropout.forward", "", "", {f32(x, count)});
  ForwardingOps::dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask);
  const Region mask_region{DType::u8, mask, count};
  close(mask_call, {mask_region});
  call.record.in.push_back(digest_regions({mask_region})[0]);
  close(call, {f32(y, count)});
}

void OpRecorder::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                                  const float* dy, float* dx) {
  if (!recording_) return ForwardingOps::dropout_backward(count, scale, mask, dy, dx);
  record("dropout.backward", "", "", {Region{DType::u8, mask, count}, f32(dy, count)},
         {f32(dx, count)}, [&] { ForwardingOps::dropout_backward(count, scale, mask, dy, dx); });
}

void OpRecorder::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                  const float* grad, float* s0, float* s1) {
  if (!recording_) return ForwardingOps::optimizer_update(rule, count, value, grad, s0, s1);
  std::vector<Region> in{f32(value, count), f32(grad, count)};
  add_if(in, s0, count);
  add_if(in, s1, count);
  std::vector<Region> out{f32(value, count)};
  add_if(out, s0, count);
  add_if(out, s1, count);
  record("optimizer.update", "", "", in, out,
         [&] { ForwardingOps::optimizer_update(rule, count, value, grad, s0, s1); });
}

bool OpRecorder::optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count,
                                           float* value, const float* grad, float* s0, float* s1,
                                           const optim::ChunkDigestTargets& digests) {
  if (!recording_) {
    return ForwardingOps::optimizer_update_digested(rule, count, value, grad, s0, s1, digests);
  }
  // Not fused while recording: the update's outputs are digested as every op's are (and an op
  // fault may change them after the update), and the recorder digests the step's tensors itself.
  return false;
}

// The losses: the value is a host float, recorded as the op's first output (its bits hashed
// here); the gradient, when asked for, is the second.
float OpRecorder::softmax_cross_entropy(int n, int classes, const float* logits,
                                        const std::int32_t* labels, float* dlogits,
                                        KernelMode mode) {
  if (!recording_) {
    return ForwardingOps::softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
  }
  float loss = 0.0f;
  std::vector<Region> out{Region{DType::f32, &loss, 1, true}};
  if (dlogits != nullptr) out.push_back(f32(dlogits, std::int64_t(n) * classes));
  record("softmax_cross_entropy", to_string(mode),
         backend::loss_geometry_key("softmax_cross_entropy", n, classes),
         {f32(logits, std::int64_t(n) * classes), Region{DType::i32, labels, n}}, out, [&] {
           loss = ForwardingOps::softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
         });
  return loss;
}

float OpRecorder::mean_squared_error(int n, int classes, const float* pred,
                                     const std::int32_t* labels, float* dpred, KernelMode mode) {
  if (!recording_) {
    return ForwardingOps::mean_squared_error(n, classes, pred, labels, dpred, mode);
  }
  float loss = 0.0f;
  std::vector<Region> out{Region{DType::f32, &loss, 1, true}};
  if (dpred != nullptr) out.push_back(f32(dpred, std::int64_t(n) * classes));
  record("mean_squared_error", to_string(mode),
         backend::loss_geometry_key("mean_squared_error", n, classes),
         {f32(pred, std::int64_t(n) * classes), Region{DType::i32, labels, n}}, out,
         [&] { loss = ForwardingOps::mean_squared_error(n, classes, pred, labels, dpred, mode); });
  return loss;
}

}  // namespace ra::audit
