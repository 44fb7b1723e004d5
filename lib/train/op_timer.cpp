#include "train/op_timer.h"

namespace ra::train {

using Clock = std::chrono::steady_clock;

const char* TimingOps::op_name(Op op) noexcept {
  switch (op) {
    case Op::conv2d_forward:
      return "conv2d_forward";
    case Op::conv2d_backward_data:
      return "conv2d_backward_data";
    case Op::conv2d_backward_filter:
      return "conv2d_backward_filter";
    case Op::conv2d_backward_bias:
      return "conv2d_backward_bias";
    case Op::dense_forward:
      return "dense_forward";
    case Op::dense_backward_data:
      return "dense_backward_data";
    case Op::dense_backward_weight:
      return "dense_backward_weight";
    case Op::dense_backward_bias:
      return "dense_backward_bias";
    case Op::maxpool2d_forward:
      return "maxpool2d_forward";
    case Op::maxpool2d_backward:
      return "maxpool2d_backward";
    case Op::activation_forward:
      return "activation_forward";
    case Op::activation_backward:
      return "activation_backward";
    case Op::dropout_forward:
      return "dropout_forward";
    case Op::dropout_backward:
      return "dropout_backward";
    case Op::softmax_cross_entropy:
      return "softmax_cross_entropy";
    case Op::mean_squared_error:
      return "mean_squared_error";
    case Op::optimizer_update:
      return "optimizer_update";
    case Op::digest:
      return "digest";
    case Op::count_:
      break;
  }
  return "?";
}

void TimingOps::add(Op op, int mode_slot, Clock::time_point start) noexcept {
  Accumulator& a = table_[static_cast<std::size_t>(op)][static_cast<std::size_t>(mode_slot)];
  a.elapsed += Clock::now() - start;
  ++a.calls;
}

std::vector<OpTime> TimingOps::times() const {
  std::vector<OpTime> out;
  for (std::size_t op = 0; op < table_.size(); ++op) {
    for (int m = 0; m < kModeSlots; ++m) {
      const Accumulator& a = table_[op][static_cast<std::size_t>(m)];
      if (a.calls == 0) continue;
      out.push_back(OpTime{op_name(static_cast<Op>(op)),
                           m == 0 ? "" : spec::to_string(static_cast<KernelMode>(m - 1)),
                           std::chrono::duration<double>(a.elapsed).count(), a.calls});
    }
  }
  return out;
}

void TimingOps::reset() noexcept {
  table_ = {};
}

void TimingOps::conv2d_forward(const backend::ConvGeometry& g, const float* x, const float* w,
                               const float* bias, backend::Activation act, float* y) {
  const auto t0 = Clock::now();
  inner_->conv2d_forward(g, x, w, bias, act, y);
  add(Op::conv2d_forward, 0, t0);
}
void TimingOps::conv2d_backward_data(const backend::ConvGeometry& g, const float* dy,
                                     const float* w, const float* relu_gate, float* dx,
                                     KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->conv2d_backward_data(g, dy, w, relu_gate, dx, mode);
  add(Op::conv2d_backward_data, slot(mode), t0);
}
void TimingOps::conv2d_backward_filter(const backend::ConvGeometry& g, const float* x,
                                       const float* dy, float* dw, KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->conv2d_backward_filter(g, x, dy, dw, mode);
  add(Op::conv2d_backward_filter, slot(mode), t0);
}
void TimingOps::conv2d_backward_bias(const backend::ConvGeometry& g, const float* dy, float* db,
                                     KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->conv2d_backward_bias(g, dy, db, mode);
  add(Op::conv2d_backward_bias, slot(mode), t0);
}
void TimingOps::dense_forward(const backend::DenseGeometry& g, const float* x, const float* w,
                              const float* bias, backend::Activation act, float* y) {
  const auto t0 = Clock::now();
  inner_->dense_forward(g, x, w, bias, act, y);
  add(Op::dense_forward, 0, t0);
}
void TimingOps::dense_backward_data(const backend::DenseGeometry& g, const float* dy,
                                    const float* w, float* dx, KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->dense_backward_data(g, dy, w, dx, mode);
  add(Op::dense_backward_data, slot(mode), t0);
}
void TimingOps::dense_backward_weight(const backend::DenseGeometry& g, const float* x,
                                      const float* dy, float* dw, KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->dense_backward_weight(g, x, dy, dw, mode);
  add(Op::dense_backward_weight, slot(mode), t0);
}
void TimingOps::dense_backward_bias(const backend::DenseGeometry& g, const float* dy, float* db,
                                    KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->dense_backward_bias(g, dy, db, mode);
  add(Op::dense_backward_bias, slot(mode), t0);
}
void TimingOps::maxpool2d_forward(const backend::PoolGeometry& g, const float* x, float* y,
                                  std::int32_t* argmax) {
  const auto t0 = Clock::now();
  inner_->maxpool2d_forward(g, x, y, argmax);
  add(Op::maxpool2d_forward, 0, t0);
}
void TimingOps::maxpool2d_backward(const backend::PoolGeometry& g, const float* dy,
                                   const std::int32_t* argmax, const float* relu_gate, float* dx,
                                   KernelMode mode) {
  const auto t0 = Clock::now();
  inner_->maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode);
  add(Op::maxpool2d_backward, slot(mode), t0);
}
void TimingOps::activation_forward(backend::Activation act, std::int64_t count, const float* x,
                                   float* y) {
  const auto t0 = Clock::now();
  inner_->activation_forward(act, count, x, y);
  add(Op::activation_forward, 0, t0);
}
void TimingOps::activation_backward(backend::Activation act, std::int64_t count, const float* y,
                                    const float* dy, float* dx) {
  const auto t0 = Clock::now();
  inner_->activation_backward(act, count, y, dy, dx);
  add(Op::activation_backward, 0, t0);
}
void TimingOps::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                                rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                                std::uint8_t* mask) {
  const auto t0 = Clock::now();
  inner_->dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask);
  add(Op::dropout_forward, 0, t0);
}
void TimingOps::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                                 const float* dy, float* dx) {
  const auto t0 = Clock::now();
  inner_->dropout_backward(count, scale, mask, dy, dx);
  add(Op::dropout_backward, 0, t0);
}
std::vector<Digest128> TimingOps::digest(const std::vector<const Tensor*>& tensors) {
  const auto t0 = Clock::now();
  std::vector<Digest128> d = inner_->digest(tensors);
  add(Op::digest, 0, t0);
  return d;
}
void TimingOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1) {
  const auto t0 = Clock::now();
  inner_->optimizer_update(rule, count, value, grad, s0, s1);
  add(Op::optimizer_update, 0, t0);
}
float TimingOps::softmax_cross_entropy(int n, int classes, const float* logits,
                                       const std::int32_t* labels, float* dlogits,
                                       KernelMode mode) {
  const auto t0 = Clock::now();
  const float loss = inner_->softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
  add(Op::softmax_cross_entropy, slot(mode), t0);
  return loss;
}
float TimingOps::mean_squared_error(int n, int classes, const float* pred,
                                    const std::int32_t* labels, float* dpred, KernelMode mode) {
  const auto t0 = Clock::now();
  const float loss = inner_->mean_squared_error(n, classes, pred, labels, dpred, mode);
  add(Op::mean_squared_error, slot(mode), t0);
  return loss;
}

}  // namespace ra::train
