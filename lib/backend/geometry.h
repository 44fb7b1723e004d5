#pragma once
// Shapes of the ops, computed once from the resolved model and passed to every kernel call.
#include <cstdint>

namespace ra::backend {

// conv2d: x[N,C,H,W] * w[K,C,R,S] -> y[N,K,P,Q] (cross-correlation, as PyTorch and Keras).
// Padding may be asymmetric ("same" with an even total pads one more at the bottom/right, as TF).
struct ConvGeometry {
  int n = 0, c = 0, h = 0, w = 0;  // input
  int k = 0, r = 0, s = 0;         // filters, kernel height, kernel width
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int p = 0, q = 0;  // output height, width

  // No padding on any side: every tap reads inside x.
  bool unpadded() const {
    return pad_top == 0 && pad_left == 0 && pad_bottom == 0 && pad_right == 0;
  }
  // A 1x1 kernel with no padding: each output pixel reads one input pixel (at any stride).
  bool unpadded_1x1() const { return r == 1 && s == 1 && unpadded(); }

  std::int64_t x_size() const { return std::int64_t(n) * c * h * w; }
  std::int64_t w_size() const { return std::int64_t(k) * c * r * s; }
  std::int64_t y_size() const { return std::int64_t(n) * k * p * q; }
};

// maxpool2d: x[N,C,H,W] -> y[N,C,P,Q]; padded positions never win (they act as -inf).
struct PoolGeometry {
  int n = 0, c = 0, h = 0, w = 0;
  int pool_h = 0, pool_w = 0;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;
  int p = 0, q = 0;

  std::int64_t x_size() const { return std::int64_t(n) * c * h * w; }
  std::int64_t y_size() const { return std::int64_t(n) * c * p * q; }
};

// Per-channel ops (batch normalisation, global average pooling): x[N,C,H,W] seen as N*C planes of
// H*W floats; plane (n, c) starts at (n*C + c)*H*W. Channel c's statistics run over its N planes
// (BatchNorm2d); a layer of rank-1 features is not one of them (the spec refuses it).
struct ChannelGeometry {
  int n = 0, c = 0, h = 0, w = 0;

  std::int64_t spatial() const { return std::int64_t(h) * w; }
  std::int64_t planes() const { return std::int64_t(n) * c; }
  std::int64_t x_size() const { return planes() * spatial(); }
};

// dense: x[N,IN] * w[OUT,IN]^T + b[OUT] -> y[N,OUT] (PyTorch Linear layout).
struct DenseGeometry {
  int n = 0, in = 0, out = 0;
};

}  // namespace ra::backend
