#include "train/op_timer.h"

namespace ra::train {

const char* TimingOps::op_name(Op op) noexcept {
  switch (op) {
    case Op::conv2d_forward:
      return "conv2d_forward";
    case Op::conv2d_forward_maxpool:
      return "conv2d_forward_maxpool";
    case Op::conv2d_backward_data:
      return "conv2d_backward_data";
    case Op::conv2d_backward_filter:
      return "conv2d_backward_filter";
    case Op::conv2d_backward_bias:
      return "conv2d_backward_bias";
    case Op::conv2d_backward_filter_bias:
      return "conv2d_backward_filter_bias";
    case Op::conv2d_backward_maxpool:
      return "conv2d_backward_maxpool";
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

TimingOps::TimingOps(std::unique_ptr<backend::Ops> inner)
    : ForwardingOps(*inner), owned_(std::move(inner)), device_timer_(owned_->make_device_timer()) {}

void TimingOps::add(Op op, int mode_slot, Clock::time_point start) noexcept {
  Accumulator& a = table_[static_cast<std::size_t>(op)][static_cast<std::size_t>(mode_slot)];
  a.elapsed += Clock::now() - start;
  ++a.calls;
}

void TimingOps::count(Op op, int mode_slot) noexcept {
  ++table_[static_cast<std::size_t>(op)][static_cast<std::size_t>(mode_slot)].calls;
}

void TimingOps::collect_device_times(bool keep) {
  if (!device_timer_) return;
  device_timer_->collect([this, keep](int tag, double seconds) {
    if (!keep) return;
    Accumulator& a = table_[static_cast<std::size_t>(tag / kModeSlots)]
                           [static_cast<std::size_t>(tag % kModeSlots)];
    a.elapsed +=
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  });
}

void TimingOps::synchronize() {
  ForwardingOps::synchronize();
  collect_device_times(true);
}

std::vector<OpTime> TimingOps::times() const {
  std::vector<OpTime> out;
  for (std::size_t op = 0; op < table_.size(); ++op) {
    for (int m = 0; m < kModeSlots; ++m) {
      const Accumulator& a = table_[op][static_cast<std::size_t>(m)];
      if (a.calls == 0) continue;
      out.push_back(OpTime{op_name(static_cast<Op>(op)),
                           m == 0 ? "" : backend::to_string(static_cast<KernelMode>(m - 1)),
                           std::chrono::duration<double>(a.elapsed).count(), a.calls});
    }
  }
  return out;
}

void TimingOps::reset() {
  collect_device_times(false);
  table_ = {};
}

void TimingOps::conv2d_forward(const backend::ConvGeometry& g, const float* x, const float* w,
                               const float* bias, backend::Activation act, float* y) {
  const Stopwatch watch(*this, Op::conv2d_forward, 0);
  ForwardingOps::conv2d_forward(g, x, w, bias, act, y);
}
void TimingOps::conv2d_backward_data(const backend::ConvGeometry& g, const float* dy,
                                     const float* w, const float* relu_gate, float* dx,
                                     KernelMode mode) {
  const Stopwatch watch(*this, Op::conv2d_backward_data, slot(mode));
  ForwardingOps::conv2d_backward_data(g, dy, w, relu_gate, dx, mode);
}
void TimingOps::conv2d_backward_filter(const backend::ConvGeometry& g, const float* x,
                                       const float* dy, float* dw, KernelMode mode) {
  const Stopwatch watch(*this, Op::conv2d_backward_filter, slot(mode));
  ForwardingOps::conv2d_backward_filter(g, x, dy, dw, mode);
}
void TimingOps::conv2d_backward_bias(const backend::ConvGeometry& g, const float* dy, float* db,
                                     KernelMode mode) {
  const Stopwatch watch(*this, Op::conv2d_backward_bias, slot(mode));
  ForwardingOps::conv2d_backward_bias(g, dy, db, mode);
}
void TimingOps::conv2d_forward_maxpool(const backend::ConvGeometry& g, const float* x,
                                       const float* w, const float* bias, backend::Activation act,
                                       const backend::PoolGeometry& pool, float* conv_out, float* y,
                                       std::int32_t* argmax) {
  if (device_timer_) {  // the parts, each timed (see op_timer.h)
    Ops::conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
    return;
  }
  const Stopwatch watch(*this, Op::conv2d_forward_maxpool, 0);
  inner().conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
}
void TimingOps::conv2d_backward_filter_bias(const backend::ConvGeometry& g, const float* x,
                                            const float* dy, float* dw, float* db,
                                            KernelMode filter_mode, KernelMode bias_mode) {
  if (device_timer_) {  // the parts, each timed (see op_timer.h)
    Ops::conv2d_backward_filter_bias(g, x, dy, dw, db, filter_mode, bias_mode);
    return;
  }
  // One mode slot per call: the filter's (the bias takes the same one where the pass is fused).
  const Stopwatch watch(*this, Op::conv2d_backward_filter_bias, slot(filter_mode));
  inner().conv2d_backward_filter_bias(g, x, dy, dw, db, filter_mode, bias_mode);
}
void TimingOps::conv2d_backward_maxpool(const backend::ConvGeometry& g,
                                        const backend::PoolGeometry& pool,
                                        const backend::MaxPoolGradient& pooled, const float* x,
                                        const float* w, const float* relu_gate, float* conv_dy,
                                        float* dx, float* dw, float* db,
                                        const backend::ConvPoolBackwardModes& modes) {
  if (device_timer_) {  // the parts, each timed (see op_timer.h)
    Ops::conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db, modes);
    return;
  }
  // One mode slot per call: the filter gradient's, the largest reduction of the four.
  const Stopwatch watch(*this, Op::conv2d_backward_maxpool, slot(modes.filter));
  inner().conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db, modes);
}
void TimingOps::dense_forward(const backend::DenseGeometry& g, const float* x, const float* w,
                              const float* bias, backend::Activation act, float* y) {
  const Stopwatch watch(*this, Op::dense_forward, 0);
  ForwardingOps::dense_forward(g, x, w, bias, act, y);
}
void TimingOps::dense_backward_data(const backend::DenseGeometry& g, const float* dy,
                                    const float* w, float* dx, KernelMode mode) {
  const Stopwatch watch(*this, Op::dense_backward_data, slot(mode));
  ForwardingOps::dense_backward_data(g, dy, w, dx, mode);
}
void TimingOps::dense_backward_weight(const backend::DenseGeometry& g, const float* x,
                                      const float* dy, float* dw, KernelMode mode) {
  const Stopwatch watch(*this, Op::dense_backward_weight, slot(mode));
  ForwardingOps::dense_backward_weight(g, x, dy, dw, mode);
}
void TimingOps::dense_backward_bias(const backend::DenseGeometry& g, const float* dy, float* db,
                                    KernelMode mode) {
  const Stopwatch watch(*this, Op::dense_backward_bias, slot(mode));
  ForwardingOps::dense_backward_bias(g, dy, db, mode);
}
void TimingOps::maxpool2d_forward(const backend::PoolGeometry& g, const float* x, float* y,
                                  std::int32_t* argmax) {
  const Stopwatch watch(*this, Op::maxpool2d_forward, 0);
  ForwardingOps::maxpool2d_forward(g, x, y, argmax);
}
void TimingOps::maxpool2d_backward(const backend::PoolGeometry& g, const float* dy,
                                   const std::int32_t* argmax, const float* relu_gate, float* dx,
                                   KernelMode mode) {
  const Stopwatch watch(*this, Op::maxpool2d_backward, slot(mode));
  ForwardingOps::maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode);
}
void TimingOps::activation_forward(backend::Activation act, std::int64_t count, const float* x,
                                   float* y) {
  const Stopwatch watch(*this, Op::activation_forward, 0);
  ForwardingOps::activation_forward(act, count, x, y);
}
void TimingOps::activation_backward(backend::Activation act, std::int64_t count, const float* y,
                                    const float* dy, float* dx) {
  const Stopwatch watch(*this, Op::activation_backward, 0);
  ForwardingOps::activation_backward(act, count, y, dy, dx);
}
void TimingOps::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                                rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                                std::uint8_t* mask) {
  const Stopwatch watch(*this, Op::dropout_forward, 0);
  ForwardingOps::dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask);
}
void TimingOps::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                                 const float* dy, float* dx) {
  const Stopwatch watch(*this, Op::dropout_backward, 0);
  ForwardingOps::dropout_backward(count, scale, mask, dy, dx);
}
std::vector<Digest128> TimingOps::digest(const std::vector<const Tensor*>& tensors) {
  const Stopwatch watch(*this, Op::digest, 0);
  return ForwardingOps::digest(tensors);
}
void TimingOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1) {
  const Stopwatch watch(*this, Op::optimizer_update, 0);
  ForwardingOps::optimizer_update(rule, count, value, grad, s0, s1);
}
bool TimingOps::optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count,
                                          float* value, const float* grad, float* s0, float* s1,
                                          const optim::ChunkDigestTargets& digests) {
  const Stopwatch watch(*this, Op::optimizer_update, 0);
  return ForwardingOps::optimizer_update_digested(rule, count, value, grad, s0, s1, digests);
}
float TimingOps::softmax_cross_entropy(int n, int classes, const float* logits,
                                       const std::int32_t* labels, float* dlogits,
                                       KernelMode mode) {
  const Stopwatch watch(*this, Op::softmax_cross_entropy, slot(mode));
  return ForwardingOps::softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
}
float TimingOps::mean_squared_error(int n, int classes, const float* pred,
                                    const std::int32_t* labels, float* dpred, KernelMode mode) {
  const Stopwatch watch(*this, Op::mean_squared_error, slot(mode));
  return ForwardingOps::mean_squared_error(n, classes, pred, labels, dpred, mode);
}

}  // namespace ra::train
