// The spec's determinism policy reaches every reducing op of a step: the mode, and the per-op
// overrides, are what each layer hands to the backend.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "nn/loss.h"
#include "nn/model.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "support/forwarding_ops.h"

namespace {

using ra::backend::KernelMode;
using ra::spec::ReducingOp;

// Records the mode each reducing op was called with, then runs it on the CPU backend.
class SpyOps final : public ra::test::ForwardingOps {
 public:
  std::map<ReducingOp, KernelMode> seen;
  void conv2d_backward_data(const ra::backend::ConvGeometry& g, const float* dy, const float* w,
                            const float* gate, float* dx, KernelMode m) override {
    seen[ReducingOp::conv2d_backward_data] = m;
    ForwardingOps::conv2d_backward_data(g, dy, w, gate, dx, m);
  }
  void conv2d_backward_filter(const ra::backend::ConvGeometry& g, const float* x, const float* dy,
                              float* dw, KernelMode m) override {
    seen[ReducingOp::conv2d_backward_filter] = m;
    ForwardingOps::conv2d_backward_filter(g, x, dy, dw, m);
  }
  void conv2d_backward_bias(const ra::backend::ConvGeometry& g, const float* dy, float* db,
                            KernelMode m) override {
    seen[ReducingOp::conv2d_backward_bias] = m;
    ForwardingOps::conv2d_backward_bias(g, dy, db, m);
  }
  void dense_backward_data(const ra::backend::DenseGeometry& g, const float* dy, const float* w,
                           float* dx, KernelMode m) override {
    seen[ReducingOp::dense_backward_data] = m;
    ForwardingOps::dense_backward_data(g, dy, w, dx, m);
  }
  void dense_backward_weight(const ra::backend::DenseGeometry& g, const float* x, const float* dy,
                             float* dw, KernelMode m) override {
    seen[ReducingOp::dense_backward_weight] = m;
    ForwardingOps::dense_backward_weight(g, x, dy, dw, m);
  }
  void dense_backward_bias(const ra::backend::DenseGeometry& g, const float* dy, float* db,
                           KernelMode m) override {
    seen[ReducingOp::dense_backward_bias] = m;
    ForwardingOps::dense_backward_bias(g, dy, db, m);
  }
  void maxpool2d_backward(const ra::backend::PoolGeometry& g, const float* dy,
                          const std::int32_t* argmax, const float* gate, float* dx,
                          KernelMode m) override {
    seen[ReducingOp::maxpool2d_backward] = m;
    ForwardingOps::maxpool2d_backward(g, dy, argmax, gate, dx, m);
  }
  float softmax_cross_entropy(int n, int c, const float* logits, const std::int32_t* labels,
                              float* d, KernelMode m) override {
    seen[ReducingOp::loss] = m;
    return ForwardingOps::softmax_cross_entropy(n, c, logits, labels, d, m);
  }
  void batchnorm_forward_training(const ra::backend::ChannelGeometry& g, const float* x,
                                  const float* gamma, const float* beta, float momentum,
                                  float epsilon, float* running_mean, float* running_var,
                                  float* saved_mean, float* saved_inv_std, float* y,
                                  KernelMode m) override {
    seen[ReducingOp::batchnorm_forward_training] = m;
    ForwardingOps::batchnorm_forward_training(g, x, gamma, beta, momentum, epsilon, running_mean,
                                              running_var, saved_mean, saved_inv_std, y, m);
  }
  void batchnorm_backward(const ra::backend::ChannelGeometry& g, const float* x, const float* dy,
                          const float* gamma, const float* saved_mean, const float* saved_inv_std,
                          float* dx, float* dgamma, float* dbeta, KernelMode m) override {
    seen[ReducingOp::batchnorm_backward] = m;
    ForwardingOps::batchnorm_backward(g, x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta,
                                      m);
  }
  float mean_squared_error(int n, int c, const float* p, const std::int32_t* labels, float* d,
                           KernelMode m) override {
    seen[ReducingOp::loss] = m;
    return ForwardingOps::mean_squared_error(n, c, p, labels, d, m);
  }
};

}  // namespace

TEST_CASE("per-op overrides of the spec reach the backend, the rest follows the mode", "[nn]") {
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [1, 6, 6], "classes": 3}},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3},
      {"type": "conv2d", "filters": 2, "kernel": 1}, {"type": "batchnorm"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "determinism": {"mode": "deterministic",
                    "ops": {"conv2d.backward_filter": "nondeterministic", "loss": "nondeterministic",
                            "batchnorm.backward": "nondeterministic"}}})"),
                                         ".");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {1, 1});
  SpyOps ops;
  ra::Tensor x({2, 1, 6, 6}, 0.5f);
  const std::vector<std::int32_t> labels{0, 2};
  ra::nn::StepContext ctx{true, 0, &spec.determinism};
  ra::Tensor dout;
  const ra::Tensor& out = model.forward(ops, x, ctx);
  ra::nn::compute_loss(ops, spec.loss, out, labels, &dout,
                       spec.determinism.mode_for(ReducingOp::loss));
  model.backward(ops, dout, ctx);

  REQUIRE(ops.seen.size() == ra::spec::kReducingOpCount);
  for (const auto& [op, mode] : ops.seen) {
    INFO(ra::spec::to_string(op));
    const bool overridden = op == ReducingOp::conv2d_backward_filter || op == ReducingOp::loss ||
                            op == ReducingOp::batchnorm_backward;
    REQUIRE(mode == (overridden ? KernelMode::nondeterministic : KernelMode::deterministic));
  }
}
