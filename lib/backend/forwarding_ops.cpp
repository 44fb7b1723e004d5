// Each op of ForwardingOps described as one OpCall (backend/op_call.h): the buffers at the
// positions its row of the op table (core/op_table.h) names, with their sizes from the geometry.
#include "backend/forwarding_ops.h"

namespace ra::backend {
namespace {

OpRegion f32(const float* data, std::int64_t count) {
  return OpRegion{DType::f32, data, count};
}

OpRegion i32(const std::int32_t* data, std::int64_t count) {
  return OpRegion{DType::i32, data, count};
}

OpRegion u8(const std::uint8_t* data, std::int64_t count) {
  return OpRegion{DType::u8, data, count};
}

const OpInfo& row(OpId id) {
  return op_info(id);
}

}  // namespace

void ForwardingOps::conv2d_forward(const ConvGeometry& g, const float* x, const float* w,
                                   const float* bias, Activation act, float* y) {
  OpRegions in{f32(x, g.x_size()), f32(w, g.w_size())};
  in.add_if(bias, g.k);
  dispatch({.op = row(OpId::conv2d_forward),
            .geometry = &g,
            .inputs = in,
            .outputs = {f32(y, g.y_size())},
            .run = [&] { inner_->conv2d_forward(g, x, w, bias, act, y); }});
}

void ForwardingOps::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                                         const float* relu_gate, float* dx, KernelMode mode) {
  OpRegions in{f32(dy, g.y_size()), f32(w, g.w_size())};
  in.add_if(relu_gate, g.x_size());
  dispatch({.op = row(OpId::conv2d_backward_data),
            .mode = mode,
            .geometry = &g,
            .inputs = in,
            .outputs = {f32(dx, g.x_size())},
            .run = [&] { inner_->conv2d_backward_data(g, dy, w, relu_gate, dx, mode); }});
}

void ForwardingOps::conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                           float* dw, KernelMode mode) {
  dispatch({.op = row(OpId::conv2d_backward_filter),
            .mode = mode,
            .geometry = &g,
            .inputs = {f32(x, g.x_size()), f32(dy, g.y_size())},
            .outputs = {f32(dw, g.w_size())},
            .run = [&] { inner_->conv2d_backward_filter(g, x, dy, dw, mode); }});
}

void ForwardingOps::conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                                         KernelMode mode) {
  dispatch({.op = row(OpId::conv2d_backward_bias),
            .mode = mode,
            .geometry = &g,
            .inputs = {f32(dy, g.y_size())},
            .outputs = {f32(db, g.k)},
            .run = [&] { inner_->conv2d_backward_bias(g, dy, db, mode); }});
}

void ForwardingOps::dense_forward(const DenseGeometry& g, const float* x, const float* w,
                                  const float* bias, Activation act, float* y) {
  OpRegions in{f32(x, std::int64_t(g.n) * g.in), f32(w, std::int64_t(g.out) * g.in)};
  in.add_if(bias, g.out);
  dispatch({.op = row(OpId::dense_forward),
            .geometry = &g,
            .inputs = in,
            .outputs = {f32(y, std::int64_t(g.n) * g.out)},
            .run = [&] { inner_->dense_forward(g, x, w, bias, act, y); }});
}

void ForwardingOps::dense_backward_data(const DenseGeometry& g, const float* dy, const float* w,
                                        float* dx, KernelMode mode) {
  dispatch({.op = row(OpId::dense_backward_data),
            .mode = mode,
            .geometry = &g,
            .inputs = {f32(dy, std::int64_t(g.n) * g.out), f32(w, std::int64_t(g.out) * g.in)},
            .outputs = {f32(dx, std::int64_t(g.n) * g.in)},
            .run = [&] { inner_->dense_backward_data(g, dy, w, dx, mode); }});
}

void ForwardingOps::dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy,
                                          float* dw, KernelMode mode) {
  dispatch({.op = row(OpId::dense_backward_weight),
            .mode = mode,
            .geometry = &g,
            .inputs = {f32(x, std::int64_t(g.n) * g.in), f32(dy, std::int64_t(g.n) * g.out)},
            .outputs = {f32(dw, std::int64_t(g.out) * g.in)},
            .run = [&] { inner_->dense_backward_weight(g, x, dy, dw, mode); }});
}

void ForwardingOps::dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                                        KernelMode mode) {
  dispatch({.op = row(OpId::dense_backward_bias),
            .mode = mode,
            .geometry = &g,
            .inputs = {f32(dy, std::int64_t(g.n) * g.out)},
            .outputs = {f32(db, g.out)},
            .run = [&] { inner_->dense_backward_bias(g, dy, db, mode); }});
}

void ForwardingOps::maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                                      std::int32_t* argmax) {
  dispatch({.op = row(OpId::maxpool2d_forward),
            .inputs = {f32(x, g.x_size())},
            .outputs = {f32(y, g.y_size()), i32(argmax, g.y_size())},
            .run = [&] { inner_->maxpool2d_forward(g, x, y, argmax); }});
}

void ForwardingOps::maxpool2d_backward(const PoolGeometry& g, const float* dy,
                                       const std::int32_t* argmax, const float* relu_gate,
                                       float* dx, KernelMode mode) {
  OpRegions in{f32(dy, g.y_size()), i32(argmax, g.y_size())};
  in.add_if(relu_gate, g.y_size());
  dispatch({.op = row(OpId::maxpool2d_backward),
            .mode = mode,
            .inputs = in,
            .outputs = {f32(dx, g.x_size())},
            .run = [&] { inner_->maxpool2d_backward(g, dy, argmax, relu_gate, dx, mode); }});
}

// ---- the composites: whole when the decorator asks, else Ops' defaults (their parts) ----------
// A composite's call names no buffers (no hook records one); its mode is the filter gradient's,
// the largest reduction of its parts.

void ForwardingOps::conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                                           const float* bias, Activation act,
                                           const PoolGeometry& pool, float* conv_out, float* y,
                                           std::int32_t* argmax) {
  if (!composites_whole_) {
    Ops::conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
    return;
  }
  dispatch({.op = row(OpId::conv2d_forward_maxpool), .run = [&] {
              inner_->conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
            }});
}

void ForwardingOps::conv2d_backward_filter_bias(const ConvGeometry& g, const float* x,
                                                const float* dy, float* dw, float* db,
                                                KernelMode filter_mode, KernelMode bias_mode) {
  if (!composites_whole_) {
    Ops::conv2d_backward_filter_bias(g, x, dy, dw, db, filter_mode, bias_mode);
    return;
  }
  dispatch({.op = row(OpId::conv2d_backward_filter_bias), .mode = filter_mode, .run = [&] {
              inner_->conv2d_backward_filter_bias(g, x, dy, dw, db, filter_mode, bias_mode);
            }});
}

void ForwardingOps::conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                                            const MaxPoolGradient& pooled, const float* x,
                                            const float* w, const float* relu_gate, float* conv_dy,
                                            float* dx, float* dw, float* db,
                                            const ConvPoolBackwardModes& modes) {
  if (!composites_whole_) {
    Ops::conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db, modes);
    return;
  }
  dispatch({.op = row(OpId::conv2d_backward_maxpool), .mode = modes.filter, .run = [&] {
              inner_->conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db,
                                              modes);
            }});
}

// ---- normalisation ----

void ForwardingOps::batchnorm_forward_training(const ChannelGeometry& g, const float* x,
                                               const float* gamma, const float* beta,
                                               float momentum, float epsilon, float* running_mean,
                                               float* running_var, float* saved_mean,
                                               float* saved_inv_std, float* y, KernelMode mode) {
  dispatch({.op = row(OpId::batchnorm_forward_training),
            .mode = mode,
            .inputs = {f32(x, g.x_size()), f32(gamma, g.c), f32(beta, g.c), f32(running_mean, g.c),
                       f32(running_var, g.c)},
            .outputs = {f32(y, g.x_size()), f32(saved_mean, g.c), f32(saved_inv_std, g.c),
                        f32(running_mean, g.c), f32(running_var, g.c)},
            .run = [&] {
              inner_->batchnorm_forward_training(g, x, gamma, beta, momentum, epsilon, running_mean,
                                                 running_var, saved_mean, saved_inv_std, y, mode);
            }});
}

// A composite, as those above: whole when the decorator asks, else Ops' default (its parts).
void ForwardingOps::batchnorm_forward_training_activation(
    const ChannelGeometry& g, const float* x, const float* gamma, const float* beta, float momentum,
    float epsilon, float* running_mean, float* running_var, float* saved_mean, float* saved_inv_std,
    Activation act, float* bn_out, float* y, KernelMode mode) {
  if (!composites_whole_) {
    Ops::batchnorm_forward_training_activation(g, x, gamma, beta, momentum, epsilon, running_mean,
                                               running_var, saved_mean, saved_inv_std, act, bn_out,
                                               y, mode);
    return;
  }
  dispatch({.op = row(OpId::batchnorm_forward_training_activation), .mode = mode, .run = [&] {
              inner_->batchnorm_forward_training_activation(g, x, gamma, beta, momentum, epsilon,
                                                            running_mean, running_var, saved_mean,
                                                            saved_inv_std, act, bn_out, y, mode);
            }});
}

void ForwardingOps::batchnorm_forward_inference(const ChannelGeometry& g, const float* x,
                                                const float* gamma, const float* beta,
                                                const float* running_mean, const float* running_var,
                                                float epsilon, float* y) {
  dispatch({.op = row(OpId::batchnorm_forward_inference),
            .inputs = {f32(x, g.x_size()), f32(gamma, g.c), f32(beta, g.c), f32(running_mean, g.c),
                       f32(running_var, g.c)},
            .outputs = {f32(y, g.x_size())},
            .run = [&] {
              inner_->batchnorm_forward_inference(g, x, gamma, beta, running_mean, running_var,
                                                  epsilon, y);
            }});
}

void ForwardingOps::batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                                       const float* gamma, const float* saved_mean,
                                       const float* saved_inv_std, float* dx, float* dgamma,
                                       float* dbeta, KernelMode mode) {
  dispatch({.op = row(OpId::batchnorm_backward),
            .mode = mode,
            .inputs = {f32(x, g.x_size()), f32(dy, g.x_size()), f32(gamma, g.c),
                       f32(saved_mean, g.c), f32(saved_inv_std, g.c)},
            .outputs = {f32(dx, g.x_size()), f32(dgamma, g.c), f32(dbeta, g.c)},
            .run = [&] {
              inner_->batchnorm_backward(g, x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma,
                                         dbeta, mode);
            }});
}

// A composite, as those above: whole when the decorator asks, else Ops' default (its parts).
void ForwardingOps::batchnorm_backward_add(const ChannelGeometry& g, const float* x,
                                           const float* dy, const float* gamma,
                                           const float* saved_mean, const float* saved_inv_std,
                                           const float* addend, float* dx, float* dgamma,
                                           float* dbeta, KernelMode mode) {
  if (!composites_whole_) {
    Ops::batchnorm_backward_add(g, x, dy, gamma, saved_mean, saved_inv_std, addend, dx, dgamma,
                                dbeta, mode);
    return;
  }
  dispatch({.op = row(OpId::batchnorm_backward_add), .mode = mode, .run = [&] {
              inner_->batchnorm_backward_add(g, x, dy, gamma, saved_mean, saved_inv_std, addend, dx,
                                             dgamma, dbeta, mode);
            }});
}

void ForwardingOps::global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) {
  dispatch({.op = row(OpId::global_avgpool_forward),
            .inputs = {f32(x, g.x_size())},
            .outputs = {f32(y, g.planes())},
            .run = [&] { inner_->global_avgpool_forward(g, x, y); }});
}

void ForwardingOps::global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) {
  dispatch({.op = row(OpId::global_avgpool_backward),
            .inputs = {f32(dy, g.planes())},
            .outputs = {f32(dx, g.x_size())},
            .run = [&] { inner_->global_avgpool_backward(g, dy, dx); }});
}

void ForwardingOps::residual_add(std::int64_t count, const float* a, const float* b, float* y) {
  dispatch({.op = row(OpId::residual_add),
            .inputs = {f32(a, count), f32(b, count)},
            .outputs = {f32(y, count)},
            .run = [&] { inner_->residual_add(count, a, b, y); }});
}

// ---- elementwise ----

void ForwardingOps::activation_forward(Activation act, std::int64_t count, const float* x,
                                       float* y) {
  dispatch({.op = row(OpId::activation_forward),
            .inputs = {f32(x, count)},
            .outputs = {f32(y, count)},
            .run = [&] { inner_->activation_forward(act, count, x, y); }});
}

void ForwardingOps::activation_backward(Activation act, std::int64_t count, const float* y,
                                        const float* dy, float* dx) {
  dispatch({.op = row(OpId::activation_backward),
            .inputs = {f32(y, count), f32(dy, count)},
            .outputs = {f32(dx, count)},
            .run = [&] { inner_->activation_backward(act, count, y, dy, dx); }});
}

void ForwardingOps::dropout_forward(std::int64_t count, std::uint32_t drop_threshold, float scale,
                                    rng::PhiloxKey key, std::uint64_t draw, const float* x,
                                    float* y, std::uint8_t* mask) {
  // The mask is written by the op and recorded as its second input (op_call.h, `stream`).
  dispatch(
      {.op = row(OpId::dropout_forward),
       .inputs = {f32(x, count), u8(mask, count)},
       .outputs = {f32(y, count)},
       .run = [&] { inner_->dropout_forward(count, drop_threshold, scale, key, draw, x, y, mask); },
       .stream = {std::uint64_t(key.k0) | std::uint64_t(key.k1) << 32, draw, drop_threshold,
                  static_cast<std::uint64_t>(count)}});
}

void ForwardingOps::dropout_backward(std::int64_t count, float scale, const std::uint8_t* mask,
                                     const float* dy, float* dx) {
  dispatch({.op = row(OpId::dropout_backward),
            .inputs = {u8(mask, count), f32(dy, count)},
            .outputs = {f32(dx, count)},
            .run = [&] { inner_->dropout_backward(count, scale, mask, dy, dx); }});
}

// ---- digests, optimizer, losses ----

std::vector<Digest128> ForwardingOps::digest(const std::vector<const Tensor*>& tensors) {
  std::vector<Digest128> digests;
  dispatch({.op = row(OpId::digest), .run = [&] { digests = inner_->digest(tensors); }});
  return digests;
}

void ForwardingOps::digest_when_done(const std::vector<const Tensor*>& tensors,
                                     std::shared_ptr<std::vector<Digest128>> out) {
  dispatch(
      {.op = row(OpId::digest), .run = [&] { inner_->digest_when_done(tensors, std::move(out)); }});
}

namespace {

// value, gradient and the states present; the update writes value and the states.
void update_regions(std::int64_t count, const float* value, const float* grad, const float* s0,
                    const float* s1, OpRegions& in, OpRegions& out) {
  in = {f32(value, count), f32(grad, count)};
  in.add_if(s0, count);
  in.add_if(s1, count);
  out = {f32(value, count)};
  out.add_if(s0, count);
  out.add_if(s1, count);
}

}  // namespace

void ForwardingOps::optimizer_update(const optim::UpdateRule& rule, std::int64_t count,
                                     float* value, const float* grad, float* s0, float* s1) {
  OpRegions in, out;
  update_regions(count, value, grad, s0, s1, in, out);
  dispatch({.op = row(OpId::optimizer_update), .inputs = in, .outputs = out, .run = [&] {
              inner_->optimizer_update(rule, count, value, grad, s0, s1);
            }});
}

bool ForwardingOps::optimizer_update_digested(const optim::UpdateRule& rule, std::int64_t count,
                                              float* value, const float* grad, float* s0, float* s1,
                                              const optim::ChunkDigestTargets& digests) {
  OpRegions in, out;
  update_regions(count, value, grad, s0, s1, in, out);
  bool fused = false;
  dispatch({.op = row(OpId::optimizer_update),
            .inputs = in,
            .outputs = out,
            .run =
                [&] {
                  fused =
                      inner_->optimizer_update_digested(rule, count, value, grad, s0, s1, digests);
                },
            .declinable = true});
  return fused;
}

// The losses: the value is a host float, the first output; the gradient, when asked for, the
// second.
float ForwardingOps::softmax_cross_entropy(int n, int classes, const float* logits,
                                           const std::int32_t* labels, float* dlogits,
                                           KernelMode mode) {
  float loss = 0.0f;
  OpRegions out{OpRegion{DType::f32, &loss, 1, true}};
  out.add_if(dlogits, std::int64_t(n) * classes);
  dispatch({.op = row(OpId::softmax_cross_entropy),
            .mode = mode,
            .geometry = LossShape{n, classes},
            .inputs = {f32(logits, std::int64_t(n) * classes), i32(labels, n)},
            .outputs = out,
            .run = [&] {
              loss = inner_->softmax_cross_entropy(n, classes, logits, labels, dlogits, mode);
            }});
  return loss;
}

float ForwardingOps::mean_squared_error(int n, int classes, const float* pred,
                                        const std::int32_t* labels, float* dpred, KernelMode mode) {
  float loss = 0.0f;
  OpRegions out{OpRegion{DType::f32, &loss, 1, true}};
  out.add_if(dpred, std::int64_t(n) * classes);
  dispatch(
      {.op = row(OpId::mean_squared_error),
       .mode = mode,
       .geometry = LossShape{n, classes},
       .inputs = {f32(pred, std::int64_t(n) * classes), i32(labels, n)},
       .outputs = out,
       .run = [&] { loss = inner_->mean_squared_error(n, classes, pred, labels, dpred, mode); }});
  return loss;
}

}  // namespace ra::backend
