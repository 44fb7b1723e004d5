#pragma once
// The Ops interface: every numeric operation of a training step. The CPU backend (backend/cpu)
// is the reference; a CUDA backend implements the same interface on device memory.
//
// Conventions for every method:
// - Pointers address memory the backend can read and write (host memory for the CPU backend).
// - "=" methods overwrite their output; none of them accumulates into it ("+=") unless it says so.
// - Ops that reduce (sum many products into one value) take a KernelMode:
//     deterministic: a reduction tree fixed by the data size, the same bits for any thread count;
//     nondeterministic: per-worker partials added into the output with atomic adds in completion
//       order, the same physics as GPU atomics: bits may differ run to run.
//   Ops without a reduction are deterministic by construction and take no mode.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/algorithm_pins.h"
#include "backend/device_timer.h"
#include "backend/geometry.h"
#include "backend/modes.h"
#include "backend/pool_gradient.h"
#include "backend/step_launch.h"
#include "core/digest.h"
#include "core/memory.h"
#include "core/tensor.h"
#include "optim/rules/update_digests.h"
#include "optim/rules/update_rules.h"
#include "rng/philox.h"

namespace ra::backend {

// The algorithm an op call ran, as the backend names it (the ledger's "algorithm"), and whether it
// gives the same bits on every execution.
struct AlgorithmUsed {
  std::string name;
  bool deterministic = true;
};

// `count` elements of `dtype` at `data`, in a backend's memory (Ops::digest_regions).
struct MemoryRegion {
  DType dtype = DType::f32;
  const void* data = nullptr;
  std::int64_t count = 0;
};

// The modes of the reductions of a conv + max-pool backward, one per op it stands for.
struct ConvPoolBackwardModes {
  KernelMode pool = KernelMode::deterministic, filter = KernelMode::deterministic,
             bias = KernelMode::deterministic, data = KernelMode::deterministic;
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual int threads() const = 0;
  // The memory every pointer argument below points into (host for the CPU backend, device
  // memory for CUDA). The model allocates its parameters, activations and gradients there.
  virtual Memory& memory() = 0;
  // Host memory that copies from and to memory() are fastest with: where a weight snapshot
  // stages its copies. Page-locked for the CUDA backend (a download into it is one DMA with no
  // bounce buffer); the process's host memory elsewhere. It is host-accessible and outlives every
  // Ops (a process-wide object), so what a snapshot staged may outlive the run's backend.
  virtual Memory& staging_memory() const { return host_memory(); }
  // The algorithm ledger (docs/trace-format.md): per op and geometry, which library algorithm
  // ran, its determinism, math mode and workspace. Empty for backends with no algorithm choice.
  virtual nlohmann::json ledger() const { return nlohmann::json::array(); }
  // The algorithm the last call of `direction` ("forward", "backward_filter", "batch_sum": the
  // ledger's directions) on the geometry `ledger_key` ran; `mode` is the call's kernel mode (none
  // for an op without a reduction). Every backend names one: the CUDA backend its ledger's entry,
  // the CPU backend its kernel (one per op, instruction set and mode). None when the backend has
  // no such call on record.
  virtual std::optional<AlgorithmUsed> algorithm_used(const std::string& /*ledger_key*/,
                                                      const std::string& /*direction*/,
                                                      std::optional<KernelMode> /*mode*/) const {
    return std::nullopt;
  }
  // From the next op call on, runs the pinned algorithms (backend/algorithm_pins.h); null: chooses
  // as its mode says again. A backend with no algorithm choice (the CPU) ignores them.
  virtual void pin_algorithms(std::shared_ptr<const AlgorithmPins> /*pins*/) {}
  // Facts about the device for the environment fingerprint (null for the CPU).
  virtual nlohmann::json device_fingerprint() const { return nullptr; }
  // The model announces each layer before the ops that compute it ("conv2d_0", "loss", and the
  // parameter name before each optimizer update), so that a decorator recording ops can say
  // whose op it saw (record/op_recorder.h); a conv and the max-pool computed with it in one call
  // as "conv2d_0+maxpool2d_0". Backends compute nothing from it.
  virtual void enter_layer(const std::string& /*name*/) {}
  // Returns when the work of every op called so far has finished. A backend that queues work (the
  // CUDA backend's ops return once it is queued) waits for its queue; one whose calls return when
  // their work is done (the CPU backend) has nothing to wait for. The trainer calls it at the end
  // of each step, before its clock stops, so that a step's time covers its device work and none
  // of it is charged to the next step or to the recorder.
  virtual void synchronize() {}
  // A timer of this backend's queued work in device time (backend/device_timer.h), for a backend
  // whose calls return before their work is done; null (the default) where host clocks around a
  // call are exact. It must not outlive this backend.
  virtual std::unique_ptr<DeviceTimer> make_device_timer() { return nullptr; }
  // Digests (core/digest.h) of flat regions of this backend's memory, each as shape [count], in
  // order: what the op recorder (record/op_recorder.h) hashes of each op's inputs and outputs. The
  // default hashes host-accessible memory where it is and downloads each region of other memory
  // first; the CUDA backend hashes them all on the device in one launch, and only their chunk
  // digests (16 bytes per 64 KiB) cross to the host.
  virtual std::vector<Digest128> digest_regions(const std::vector<MemoryRegion>& regions);
  // Digests deferred to the end of a step, for a backend whose calls return before their work is
  // done (queues_digests(): the CUDA backend): queue_digests hashes `regions` in order with the
  // work queued so far, as digest_regions would but without waiting, and returns the ticket of
  // the first (the others follow it); take_queued_digests waits once and returns the digest of
  // every ticket since the last take, by ticket, emptying the queue. A step's op records so cost
  // one wait and one download (record/op_recorder.h). The other backends never get the two calls
  // (the defaults throw std::logic_error).
  virtual bool queues_digests() const { return false; }
  virtual std::size_t queue_digests(const std::vector<MemoryRegion>& regions);
  virtual std::vector<Digest128> take_queued_digests();
  // Digests of tensors (digest(), below) as they are now, in order with the work queued so far,
  // stored into `*out` by synchronize() at the latest: what lets the trace recorder hash a step's
  // weights without a wait, download and fold of their own; the device hashes while the host goes
  // on (record/recorder.h). The default calls digest() at once; the CUDA backend queues the
  // hashing and the copy of its chunk digests to page-locked memory, and fills `*out` at its next
  // synchronize(). The backend shares `out` until then: a caller that gives up (a run that
  // failed) may drop its own share.
  virtual void digest_when_done(const std::vector<const Tensor*>& tensors,
                                std::shared_ptr<std::vector<Digest128>> out);
  // A training step as a unit (backend/step_launch.h). The trainer calls begin_step before the
  // step's first op and end_step after its last, before synchronize(). A backend that can run a
  // whole step's work as one launch (the CUDA backend: a CUDA graph, captured once and replayed)
  // decides in begin_step how this step runs; the ops between still get every call, in the same
  // order, with this step's values (dropout's draw, the optimizer's rule), whichever it is.
  // end_step launches what was captured or replayed and returns true; false when the step's work
  // did not run at all (its capture failed, or its graph no longer fits its buffers): the trainer
  // then undoes the host side of the step (the optimizer's iteration count) and runs it again,
  // as begin_step then says. `op_failure`: empty when every op of the step returned, else the
  // message of the one that threw; nothing of such a step is launched, and a capture it broke
  // is ended and reported as failed. The defaults: every step eager, saying why; nothing to
  // launch.
  virtual StepLaunchDecision begin_step(const StepRequest& request);
  virtual bool end_step(std::string_view /*op_failure*/) { return true; }

  // ---- convolution ----
  // y = act(conv(x, w) (+ bias[k] when bias != nullptr)): bias and activation fused into the
  // store, the same bits as a separate activation_forward over the biased output.
  virtual void conv2d_forward(const ConvGeometry& g, const float* x, const float* w,
                              const float* bias, Activation act, float* y) = 0;
  // dx = conv_transpose(dy, w): each dx element sums over filters and kernel taps. With
  // relu_gate (the conv's input x, when it is a relu output): dx = relu_gate > 0 ? dx : 0, the
  // relu backward of the layer before, with the bits of activation_backward(relu) after the op.
  virtual void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                                    const float* relu_gate, float* dx, KernelMode mode) = 0;
  // dw = sum over batch and output positions of dy * x.
  virtual void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                      float* dw, KernelMode mode) = 0;
  // db[k] = sum over batch and output positions of dy[n,k,p,q].
  virtual void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                                    KernelMode mode) = 0;
  // Both gradients of a conv with a bias, each reduction in its own mode. The default makes the
  // two calls above (through any decorator, which then sees them); the CPU backend fuses them
  // into one pass over dy when the modes agree, with the bits of the two calls.
  virtual void conv2d_backward_filter_bias(const ConvGeometry& g, const float* x, const float* dy,
                                           float* dw, float* db, KernelMode filter_mode,
                                           KernelMode bias_mode) {
    conv2d_backward_filter(g, x, dy, dw, filter_mode);
    conv2d_backward_bias(g, dy, db, bias_mode);
  }

  // ---- dense ----
  // y = act(x w^T (+ b)), fused as for conv2d_forward.
  virtual void dense_forward(const DenseGeometry& g, const float* x, const float* w,
                             const float* bias, Activation act, float* y) = 0;
  // dx = dy w.
  virtual void dense_backward_data(const DenseGeometry& g, const float* dy, const float* w,
                                   float* dx, KernelMode mode) = 0;
  // dw = dy^T x (sum over the batch).
  virtual void dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy,
                                     float* dw, KernelMode mode) = 0;
  // db = sum over the batch of dy.
  virtual void dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                                   KernelMode mode) = 0;

  // ---- pooling ----
  // y = max over each window; argmax[i] = flat index into x (within the whole tensor) of the
  // winner of y[i] (the first maximum in row-major window order on ties).
  virtual void maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                                 std::int32_t* argmax) = 0;
  // dx = 0, then dx[argmax[i]] += g_i, g_i = dy[i], or, with relu_gate (the pooled output y of
  // a relu output), g_i = relu_gate[i] > 0 ? dy[i] : 0. Max-pooling commutes with relu and y[i]
  // is the winner's value, so the gate applies the relu backward of the layer before as well
  // (elements that win nothing get 0 either way): the bits of this op without gate followed by
  // activation_backward(relu). Overlapping windows (stride < pool) make this a reduction; with
  // stride >= pool every dx element has at most one writer.
  virtual void maxpool2d_backward(const PoolGeometry& g, const float* dy,
                                  const std::int32_t* argmax, const float* relu_gate, float* dx,
                                  KernelMode mode) = 0;

  // ---- normalisation ----
  // Batch normalisation in training (PyTorch's BatchNorm2d, cuDNN's spatial mode): for each
  // channel c over its m = N*H*W elements, mean = sum x / m and var = sum (x - mean)^2 / m (biased,
  // two passes); inv_std = 1 / sqrt(var + epsilon); y = (x - mean) * (inv_std * gamma) + beta
  // ('='). saved_mean = mean, saved_inv_std = inv_std ('=', [C]: what the backward reads, as
  // cuDNN's). running_mean = (1 - momentum) running_mean + momentum mean and running_var likewise
  // with the unbiased var * m / (m - 1) (var when m = 1), updated in place: PyTorch's rule and
  // cuDNN's. x and y may not alias. The channel sums reduce m terms: in `mode`.
  virtual void batchnorm_forward_training(const ChannelGeometry& g, const float* x,
                                          const float* gamma, const float* beta, float momentum,
                                          float epsilon, float* running_mean, float* running_var,
                                          float* saved_mean, float* saved_inv_std, float* y,
                                          KernelMode mode) = 0;
  // y = act(batchnorm_forward_training(...)): the two ops in one call, for a batch normalisation
  // whose output only the activation after it reads (pre-activation ResNets: batchnorm, relu,
  // conv). bn_out ([N, C, H, W]) is where the default stores the normalised values between the
  // two; a backend that fuses them (the CPU backend, for relu) may leave it unwritten, applying
  // the activation as it stores y. The values, statistics and running updates are those of the
  // two ops. x may alias neither output; bn_out and y may alias.
  virtual void batchnorm_forward_training_activation(
      const ChannelGeometry& g, const float* x, const float* gamma, const float* beta,
      float momentum, float epsilon, float* running_mean, float* running_var, float* saved_mean,
      float* saved_inv_std, Activation act, float* bn_out, float* y, KernelMode mode) {
    batchnorm_forward_training(g, x, gamma, beta, momentum, epsilon, running_mean, running_var,
                               saved_mean, saved_inv_std, bn_out, mode);
    activation_forward(act, g.x_size(), bn_out, y);
  }
  // Inference: y = (x - running_mean) * (gamma / sqrt(running_var + epsilon)) + beta ('='), no
  // reduction; x and y may alias.
  virtual void batchnorm_forward_inference(const ChannelGeometry& g, const float* x,
                                           const float* gamma, const float* beta,
                                           const float* running_mean, const float* running_var,
                                           float epsilon, float* y) = 0;
  // The backward of batchnorm_forward_training from its saved statistics, all '=':
  // dbeta[c] = sum dy, dgamma[c] = inv_std * sum dy (x - mean), and
  // dx = gamma inv_std (dy - dbeta / m - (x - mean) inv_std dgamma / m). dx may alias dy.
  virtual void batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                                  const float* gamma, const float* saved_mean,
                                  const float* saved_inv_std, float* dx, float* dgamma,
                                  float* dbeta, KernelMode mode) = 0;
  // dx = batchnorm_backward's dx + addend, the other outputs batchnorm_backward's: the backward
  // and the residual_add after it in one call, for a residual block whose body starts with a
  // batch normalisation (its input gradient is the body's plus the shortcut's, addend). The
  // values are those of the two ops (the add's operands in that order). addend may alias neither
  // dy nor dx.
  virtual void batchnorm_backward_add(const ChannelGeometry& g, const float* x, const float* dy,
                                      const float* gamma, const float* saved_mean,
                                      const float* saved_inv_std, const float* addend, float* dx,
                                      float* dgamma, float* dbeta, KernelMode mode) {
    batchnorm_backward(g, x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta, mode);
    residual_add(g.x_size(), dx, addend, dx);
  }

  // ---- global average pooling ----
  // y[n, c] = (sum of the plane (n, c) of x) / (H * W) ('=', y [N, C]): one writer per output,
  // its sum in an order fixed by the plane size, so no mode.
  virtual void global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) = 0;
  // dx[n, c, h, w] = dy[n, c] / (H * W) ('='): no reduction.
  virtual void global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) = 0;

  // ---- residual ----
  // y = a + b elementwise ('='): a residual block's output (its body's plus its shortcut's) and
  // its input gradient (the body's plus the shortcut's). One add per element: no mode. Any of a,
  // b and y may alias.
  virtual void residual_add(std::int64_t count, const float* a, const float* b, float* y) = 0;

  // ---- conv + pool ----
  // Whether this backend computes a conv and the max-pool that alone reads its output better in
  // one call (conv2d_forward_maxpool, conv2d_backward_maxpool) than in separate ones, for these
  // geometries: the caller then makes the pair's calls, else the separate ones. Either way the
  // values are the same; only where the conv output lives (memory or cache) differs. The
  // default, false, is right for a backend whose pair calls are the defaults below.
  virtual bool fuses_conv_maxpool(const ConvGeometry& /*g*/, const PoolGeometry& /*pool*/) const {
    return false;
  }
  // y, argmax = maxpool2d_forward(pool, act(conv(x, w) (+ bias))): the two ops in one call, for a
  // conv whose output only its max-pool reads. conv_out ([N, K, P, Q]) is where the default
  // stores the conv output between the two; a backend that fuses them (the CPU backend, for the
  // Keras 2x2/2 pool) may leave it unwritten, keeping each image's output in cache. The values
  // and argmax are those of the two ops.
  virtual void conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                                      const float* bias, Activation act, const PoolGeometry& pool,
                                      float* conv_out, float* y, std::int32_t* argmax) {
    conv2d_forward(g, x, w, bias, act, conv_out);
    maxpool2d_forward(pool, conv_out, y, argmax);
  }

  // The backward of the same pair, from the pool's output gradient: conv_dy =
  // maxpool2d_backward(pool, pooled...), then conv2d_backward_filter_bias (conv2d_backward_filter
  // when db is null) and, when dx is not null, conv2d_backward_data(g, conv_dy, w, relu_gate, dx).
  // conv_dy ([N, K, P, Q]) is where the default stores the conv output's gradient between the
  // calls; a backend that fuses them (the CPU backend, for the Keras 2x2/2 pool) may leave it
  // unwritten, building each image's gradient in cache for each use. The values are those of the
  // calls.
  virtual void conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                                       const MaxPoolGradient& pooled, const float* x,
                                       const float* w, const float* relu_gate, float* conv_dy,
                                       float* dx, float* dw, float* db,
                                       const ConvPoolBackwardModes& modes) {
    maxpool2d_backward(pool, pooled.dy, pooled.argmax, pooled.relu_gate, conv_dy, modes.pool);
    if (db != nullptr) {
      conv2d_backward_filter_bias(g, x, conv_dy, dw, db, modes.filter, modes.bias);
    } else {
      conv2d_backward_filter(g, x, conv_dy, dw, modes.filter);
    }
    if (dx != nullptr) conv2d_backward_data(g, conv_dy, w, relu_gate, dx, modes.data);
  }

  // ---- elementwise ----
  // y = act(x); x and y may alias.
  virtual void activation_forward(Activation act, std::int64_t count, const float* x, float* y) = 0;
  // dx = dy * act'(x), written in terms of the forward OUTPUT y (relu: y > 0; tanh: 1 - y^2;
  // sigmoid: y (1 - y)). dy and dx may alias.
  virtual void activation_backward(Activation act, std::int64_t count, const float* y,
                                   const float* dy, float* dx) = 0;
  // Inverted dropout: element i is kept when word i of Philox(key, draw) >> 8 is at least
  // drop_threshold (= round(rate * 2^24)); kept elements are scaled by 1 / (1 - rate).
  // mask[i] = 1 for kept, 0 for dropped. The draw index is the global training step, so masks are
  // a pure function of (seed, layer, step, element) on every backend and thread count.
  virtual void dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                               rng::PhiloxKey key, std::uint64_t draw, const float* x, float* y,
                               std::uint8_t* mask) = 0;
  // dx = dy * mask * scale. dy and dx may alias.
  virtual void dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                                const float* dy, float* dx) = 0;

  // ---- digests ----
  // Digests (core/digest.h) of tensors in this backend's memory. The default downloads each
  // tensor and hashes it on the host; a device backend computes the chunk digests where the data
  // is, so no tensor crosses to the host.
  virtual std::vector<Digest128> digest(const std::vector<const Tensor*>& tensors);

  // ---- optimizer ----
  // One optimizer step over `count` elements: apply_update(rule, ...) of optim/rules/update_rules.h
  // per element (s0, s1: the element's state arrays, null when the rule has none). Elementwise, so
  // deterministic on every backend; the same fp32 operations as the host optimizer.
  virtual void optimizer_update(const optim::UpdateRule& rule, std::int64_t count, float* value,
                                const float* grad, float* s0, float* s1) = 0;
  // The same update, also writing the chunk digests (core/digest.h) of value, grad, s0 and s1 as
  // they are after it into `digests` (optim/rules/update_digests.h), hashed while each chunk is
  // still in cache. Returns false, having changed nothing, on a backend that does not fuse the two
  // (the default): the caller then calls optimizer_update and digests the tensors from memory.
  virtual bool optimizer_update_digested(const optim::UpdateRule& /*rule*/, std::int64_t /*count*/,
                                         float* /*value*/, const float* /*grad*/, float* /*s0*/,
                                         float* /*s1*/,
                                         const optim::ChunkDigestTargets& /*digests*/) {
    return false;
  }

  // ---- losses (mean over the batch) ----
  // The gradient output (dlogits, dpred) may be nullptr when only the value is wanted (evaluation).
  // Returns mean_n(-log softmax(logits[n])[label[n]]); dlogits = (softmax - onehot) / n.
  virtual float softmax_cross_entropy(int n, int classes, const float* logits,
                                      const std::int32_t* labels, float* dlogits,
                                      KernelMode mode) = 0;
  // Returns mean over n*classes of (pred - onehot(label))^2; dpred = 2 (pred - onehot) /
  // (n*classes).
  virtual float mean_squared_error(int n, int classes, const float* pred,
                                   const std::int32_t* labels, float* dpred, KernelMode mode) = 0;

  // A training step's loss, whose value its caller reads only once the step's work is done: the
  // loss op `kind` with the arguments above, its value in *value when synchronize() returns, and a
  // label outside [0, classes) thrown (ra::InputError) by synchronize() at the latest. The CUDA
  // backend copies the value back with the step's other work, so that the step does not wait for
  // its forward pass before queuing its backward pass (the calls above wait: they return the
  // value). The default makes the call above, through any decorator, which so sees a loss op like
  // any other, and stores the value at once. `value` must stay valid until synchronize().
  enum class LossKind { softmax_cross_entropy, mean_squared_error };
  virtual void loss_when_done(LossKind kind, int n, int classes, const float* pred,
                              const std::int32_t* labels, float* grad, KernelMode mode,
                              float* value);
};

}  // namespace ra::backend
