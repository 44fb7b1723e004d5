#pragma once
// An Ops that forwards every call to another backend. Each op call becomes one generic call record
// (backend/op_call.h: its row of the op table, mode, buffers and the call itself) handed to one
// hook, observe(): the op recorder (record/op_recorder.h) and bench's timer (train/op_timer.h)
// override that alone; tests may also override single ops to count calls or stand in for a device
// backend. One list of forwards (forwarding_ops.cpp), so an Ops signature change is made there
// once. Composite ops with a default in Ops (conv2d_forward_maxpool, conv2d_backward_filter_bias,
// conv2d_backward_maxpool, batchnorm_forward_training_activation, batchnorm_backward_add) are not
// forwarded whole unless a
// decorator asks for them whole (observe_composites_whole): the default calls their parts through
// the decorator, so a decorator observing the parts sees them (and a training run through one takes
// the unfused paths: tests compare it with the plain backend bit for bit).
#include "backend/op_call.h"
#include "backend/ops.h"

namespace ra::backend {

class ForwardingOps : public Ops {
 public:
  // `inner` must outlive this object; it is not used during construction.
  explicit ForwardingOps(Ops& inner) noexcept : inner_(&inner) {}

  std::string name() const override { return inner_->name(); }
  int threads() const override { return inner_->threads(); }
  Memory& memory() override { return inner_->memory(); }
  Memory& staging_memory() const override { return inner_->staging_memory(); }
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
  // Not forwarded: a decorator sees (records, times) each op as it is called, which a replayed
  // step would not call; the steps through one run eager.
  StepLaunchDecision begin_step(const StepRequest& request) override {
    return {StepLaunch::eager, request.graphs ? "ops observed one by one (op records or op times)"
                                              : "CUDA graphs off"};
  }
  // The inner backend's answer, so that a run through a decorator makes the same calls (a
  // decorator then sees a pair call's parts unless it forwards the pair through inner()).
  bool fuses_conv_maxpool(const ConvGeometry& g, const PoolGeometry& pool) const override {
    return inner_->fuses_conv_maxpool(g, pool);
  }

  // loss_when_done is not forwarded: Ops' default calls this decorator's loss op, which it sees
  // (and records) like any other, and whose value the inner backend returns at once.

  // The ops: each is described as one OpCall and handed to observe(), whose default runs it.
  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      Activation act, float* y) override;
  void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                            const float* relu_gate, float* dx, KernelMode mode) override;
  void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                              KernelMode mode) override;
  void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                            KernelMode mode) override;
  void conv2d_backward_filter_bias(const ConvGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, KernelMode filter_mode,
                                   KernelMode bias_mode) override;
  void dense_forward(const DenseGeometry& g, const float* x, const float* w, const float* bias,
                     Activation act, float* y) override;
  void dense_backward_data(const DenseGeometry& g, const float* dy, const float* w, float* dx,
                           KernelMode mode) override;
  void dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy, float* dw,
                             KernelMode mode) override;
  void dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                           KernelMode mode) override;
  void maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override;
  void maxpool2d_backward(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                          const float* relu_gate, float* dx, KernelMode mode) override;
  void conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                              const float* bias, Activation act, const PoolGeometry& pool,
                              float* conv_out, float* y, std::int32_t* argmax) override;
  void conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                               const MaxPoolGradient& pooled, const float* x, const float* w,
                               const float* relu_gate, float* conv_dy, float* dx, float* dw,
                               float* db, const ConvPoolBackwardModes& modes) override;
  void batchnorm_forward_training(const ChannelGeometry& g, const float* x, const float* gamma,
                                  const float* beta, float momentum, float epsilon,
                                  float* running_mean, float* running_var, float* saved_mean,
                                  float* saved_inv_std, float* y, KernelMode mode) override;
  void batchnorm_forward_training_activation(const ChannelGeometry& g, const float* x,
                                             const float* gamma, const float* beta, float momentum,
                                             float epsilon, float* running_mean, float* running_var,
                                             float* saved_mean, float* saved_inv_std,
                                             Activation act, float* bn_out, float* y,
                                             KernelMode mode) override;
  void batchnorm_forward_inference(const ChannelGeometry& g, const float* x, const float* gamma,
                                   const float* beta, const float* running_mean,
                                   const float* running_var, float epsilon, float* y) override;
  void batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                          const float* gamma, const float* saved_mean, const float* saved_inv_std,
                          float* dx, float* dgamma, float* dbeta, KernelMode mode) override;
  void batchnorm_backward_add(const ChannelGeometry& g, const float* x, const float* dy,
                              const float* gamma, const float* saved_mean,
                              const float* saved_inv_std, const float* addend, float* dx,
                              float* dgamma, float* dbeta, KernelMode mode) override;
  void global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) override;
  void global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) override;
  void residual_add(std::int64_t count, const float* a, const float* b, float* y) override;
  void activation_forward(Activation act, std::int64_t count, const float* x, float* y) override;
  void activation_backward(Activation act, std::int64_t count, const float* y, const float* dy,
                           float* dx) override;
  void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                       rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                       std::uint8_t* mask) override;
  void dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask, const float* dy,
                        float* dx) override;
  std::vector<Digest128> digest(const std::vector<const Tensor*>& tensors) override;
  void digest_when_done(const std::vector<const Tensor*>& tensors,
                        std::shared_ptr<std::vector<Digest128>> out) override;
  void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                        const float* grad, float* s0, float* s1) override;
  bool optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                 const float* grad, float* s0, float* s1,
                                 const optim::ChunkDigestTargets& digests) override;
  float softmax_cross_entropy(int n, int classes, const float* logits, const std::int32_t* labels,
                              float* dlogits, KernelMode mode) override;
  float mean_squared_error(int n, int classes, const float* pred, const std::int32_t* labels,
                           float* dpred, KernelMode mode) override;

  // Hands `call` to this decorator's hook: the path of every op above, and of an op described
  // outside backend::Ops (docs/ops.md's worked example builds its toy op's call so in a test).
  void dispatch(const OpCall& call) { observe(call); }

 protected:
  Ops& inner() const noexcept { return *inner_; }
  // The one hook: every op call made through this decorator, described. The default runs it.
  virtual void observe(const OpCall& call) { call.run(); }
  // Whether the composite ops (conv2d_forward_maxpool, conv2d_backward_filter_bias,
  // conv2d_backward_maxpool, batchnorm_forward_training_activation, batchnorm_backward_add) reach
  // observe() whole, run by
  // the inner backend (its fused passes), rather than as Ops' defaults whose parts each reach it
  // (the default; see the top).
  void observe_composites_whole(bool whole) noexcept { composites_whole_ = whole; }

 private:
  Ops* inner_;
  bool composites_whole_ = false;
};

}  // namespace ra::backend
