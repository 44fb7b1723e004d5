#pragma once
// An Ops that forwards every call to another backend. Decorators derive from it and override
// only what they observe: TimingOps (train/op_timer.h) times the ops, tests count calls or stand
// in for a device backend. One list of forwards, so an Ops signature change is made here once.
// Composite ops with a default in Ops (conv2d_forward_maxpool, conv2d_backward_filter_bias,
// conv2d_backward_maxpool) are not forwarded whole: the default calls their parts through the
// decorator, so a decorator observing the parts sees them (and a training run through one takes
// the unfused paths: tests compare it with the plain backend bit for bit). A decorator that wants
// the backend's fused version forwards it through inner().
#include "backend/ops.h"

namespace ra::backend {

class ForwardingOps : public Ops {
 public:
  // `inner` must outlive this object; it is not used during construction.
  explicit ForwardingOps(Ops& inner) noexcept : inner_(&inner) {}

  std::string name() const override { return inner_->name(); }
  int threads() const override { return inner_->threads(); }
  Memory& memory() override { return inner_->memory(); }
  nlohmann::json ledger() const override { return inner_->ledger(); }
  nlohmann::json device_fingerprint() const override { return inner_->device_fingerprint(); }
  std::optional<AlgorithmUsed> algorithm_used(const std::string& ledger_key,
                                              const std::string& direction,
                                              std::optional<KernelMode> mode) const override {
    return inner_->algorithm_used(ledger_key, direction, mode);
  }
  void pin_algorithms(std::shared_ptr<const AlgorithmPins> pins) override {
    inner_->pin_algorithms(std::move(pins));
  }
  void enter_layer(const std::string& name) override { inner_->enter_layer(name); }
  void synchronize() override { inner_->synchronize(); }
  std::unique_ptr<DeviceTimer> make_device_timer() override { return inner_->make_device_timer(); }
  std::vector<Digest128> digest_regions(const std::vector<MemoryRegion>& regions) override {
    return inner_->digest_regions(regions);
  }
  bool queues_digests() const override { return inner_->queues_digests(); }
  std::size_t queue_digests(const std::vector<MemoryRegion>& regions) override {
    return inner_->queue_digests(regions);
  }
  std::vector<Digest128> take_queued_digests() override { return inner_->take_queued_digests(); }
  // The inner backend's answer, so that a run through a decorator makes the same calls (a
  // decorator then sees a pair call's parts unless it forwards the pair through inner()).
  bool fuses_conv_maxpool(const ConvGeometry& g, const PoolGeometry& pool) const override {
    return inner_->fuses_conv_maxpool(g, pool);
  }

  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      Activation act, float* y) override {
    inner_->conv2d_forward(g, x, w, bias, act, y);
  }
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                            const float* relu_gate, float* dx, KernelMode mode) override {
    inner_->conv2d_backward_data(g, dy, w, relu_gate, dx, mode);
  }
  void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              KernelMode mode) override {
    inner_->conv2d_backward_filter(g, x, dy, dw, mode);
  }
  void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                            KernelMode mode) override {
    inner_->conv2d_backward_bias(g, dy, db, mode);
  }
  void dense_forward(const DenseGeometry& g, const float* x, const float* w, const float* bias,
                     Activation act, float* y) override {
    inner_->dense_forward(g, x, w, bias, act, y);
  }
  void dense_backward_data(const DenseGeometry& g, const float* dy, const float* w, float* dx,
                           KernelMode mode) override {
    inner_->dense_backward_data(g, dy, w, dx, mode);
  }
  void dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy, float* dw,
                             KernelMode mode) override {
    inner_->dense_backward_weight(g, x, dy, dw, mode);
  }
  void dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                           KernelMode mode) override {
    inner_->dense_backward_bias(g, dy, db, mode);
  }
  void maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override {
    inner_->maxpool2d_forward(g, x, y, argmax);
  }
  void maxpool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                          const float* relu_gate, float* dx, KernelMode mode) override {
    inner_->maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode);
  }
  void activation_forward(Activation act, std::int64_t count, const float* x, float* y) override {
    inner_->activation_forward(act, count, x, y);
  }
  void activation_backward(Activation act, std::int64_t count, const float* y, const float* dy,
                           float* dx) override {
    inner_->activation_backward(act, count, y, dy, dx);
  }
  void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                       rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                       std::uint8_t* mask) override {
    inner_->dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask);
  }
  void dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask, const float* dy,
                        float* dx) override {
    inner_->dropout_backward(count, scale, mask, dy, dx);
  }
  std::vector<Digest128> digest(const std::vector<const Tensor*>& tensors) override {
    return inner_->digest(tensors);
  }
  void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override {
    inner_->optimizer_update(rule, count, value, grad, s0, s1);
  }
  bool optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1,
                                 const optim::ChunkDigestTargets& digests) override {
    return inner_->optimizer_update_digested(rule, count, value, grad, s0, s1, digests);
  }
  float softmax_cross_entropy(int n, int classes, const float* logits, const std::int32_t* labels,
                              float* dlogits, KernelMode mode) override {
    return inner_->softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
  }
  float mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                           float* dpred, KernelMode mode) override {
    return inner_->mean_squared_error(n, classes, pred, labels, dpred, mode);
  }

 protected:
  Ops& inner() const noexcept { return *inner_; }

 private:
  Ops* inner_;
};

}  // namespace ra::backend
