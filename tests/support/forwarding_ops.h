#pragma once
// An Ops that forwards every call to a CPU backend: tests derive from it to observe calls (which
// kernel mode each op got) or to stand in for a device backend (a memory the host may not touch).
#include "backend/cpu/cpu_ops.h"

namespace ra::test {

class ForwardingOps : public backend::Ops {
 public:
  explicit ForwardingOps(int threads = 2) : cpu_(threads) {}
  std::string name() const override { return "forwarding"; }
  int threads() const override { return cpu_.threads(); }
  Memory& memory() override { return cpu_.memory(); }
  void conv2d_forward(const backend::ConvGeometry& g, const float* x, const float* w,
                      const float* b, backend::Activation act, float* y) override {
    cpu_.conv2d_forward(g, x, w, b, act, y);
  }
  void conv2d_backward_data(const backend::ConvGeometry& g, const float* dy, const float* w,
                            const float* gate, float* dx, spec::KernelMode m) override {
    cpu_.conv2d_backward_data(g, dy, w, gate, dx, m);
  }
  void conv2d_backward_filter(const backend::ConvGeometry& g, const float* x, const float* dy,
                              float* dw, spec::KernelMode m) override {
    cpu_.conv2d_backward_filter(g, x, dy, dw, m);
  }
  void conv2d_backward_bias(const backend::ConvGeometry& g, const float* dy, float* db,
                            spec::KernelMode m) override {
    cpu_.conv2d_backward_bias(g, dy, db, m);
  }
  void dense_forward(const backend::DenseGeometry& g, const float* x, const float* w,
                     const float* b, backend::Activation act, float* y) override {
    cpu_.dense_forward(g, x, w, b, act, y);
  }
  void dense_backward_data(const backend::DenseGeometry& g, const float* dy, const float* w,
                           float* dx, spec::KernelMode m) override {
    cpu_.dense_backward_data(g, dy, w, dx, m);
  }
  void dense_backward_weight(const backend::DenseGeometry& g, const float* x, const float* dy,
                             float* dw, spec::KernelMode m) override {
    cpu_.dense_backward_weight(g, x, dy, dw, m);
  }
  void dense_backward_bias(const backend::DenseGeometry& g, const float* dy, float* db,
                           spec::KernelMode m) override {
    cpu_.dense_backward_bias(g, dy, db, m);
  }
  void maxpool2d_forward(const backend::PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override {
    cpu_.maxpool2d_forward(g, x, y, argmax);
  }
  void maxpool2d_backward(const backend::PoolGeometry& g, const float* dy,
                          const std::int32_t* argmax, const float* gate, float* dx,
                          spec::KernelMode m) override {
    cpu_.maxpool2d_backward(g, dy, argmax, gate, dx, m);
  }
  void activation_forward(spec::Activation a, std::int64_t n, const float* x, float* y) override {
    cpu_.activation_forward(a, n, x, y);
  }
  void activation_backward(spec::Activation a, std::int64_t n, const float* y, const float* dy,
                           float* dx) override {
    cpu_.activation_backward(a, n, y, dy, dx);
  }
  void dropout_forward(std::int64_t n, std::uint32_t t, float s, rng::PhiloxKey k, std::uint64_t d,
                       const float* x, float* y, std::uint8_t* mask) override {
    cpu_.dropout_forward(n, t, s, k, d, x, y, mask);
  }
  void dropout_backward(std::int64_t n, float s, const std::uint8_t* mask, const float* dy,
                        float* dx) override {
    cpu_.dropout_backward(n, s, mask, dy, dx);
  }
  void optimizer_update(const optim::UpdateRule& r, std::int64_t n, float* v, const float* g,
                        float* s0, float* s1) override {
    cpu_.optimizer_update(r, n, v, g, s0, s1);
  }
  float softmax_cross_entropy(int n, int c, const float* logits, const std::int32_t* labels,
                              float* d, spec::KernelMode m) override {
    return cpu_.softmax_cross_entropy(n, c, logits, labels, d, m);
  }
  float mean_squared_error(int n, int c, const float* p, const std::int32_t* labels, float* d,
                           spec::KernelMode m) override {
    return cpu_.mean_squared_error(n, c, p, labels, d, m);
  }

 private:
  backend::CpuOps cpu_;
};

}  // namespace ra::test
