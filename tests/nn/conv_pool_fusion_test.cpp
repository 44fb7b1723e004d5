// Whether the Model runs a conv and its max-pool as one backend call is the backend's answer
// (Ops::fuses_conv_maxpool) for pairs the layers offer (a conv whose output only the pool reads):
// the model makes the pair calls when the backend says yes, the separate ones when it says no,
// with the same bits either way.
#include <catch2/catch.hpp>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "support/forwarding_ops.h"

namespace {

using ra::backend::ConvGeometry;
using ra::backend::PoolGeometry;

// Answers fuses_conv_maxpool as told, records what it was asked, counts the calls made, and runs
// the pair calls with the CPU backend's fused kernels.
class FusionSpy final : public ra::test::ForwardingOps {
 public:
  explicit FusionSpy(bool answer) : answer_(answer) {}
  mutable std::vector<std::pair<ConvGeometry, PoolGeometry>> asked;
  int pair_forward = 0, pair_backward = 0, conv_forward = 0, pool_forward = 0;

  bool fuses_conv_maxpool(const ConvGeometry& g, const PoolGeometry& pool) const override {
    asked.emplace_back(g, pool);
    return answer_;
  }
  void conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                              const float* bias, ra::backend::Activation act,
                              const PoolGeometry& pool, float* conv_out, float* y,
                              std::int32_t* argmax) override {
    ++pair_forward;
    inner().conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
  }
  void conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                               const ra::backend::MaxPoolGradient& pooled, const float* x,
                               const float* w, const float* relu_gate, float* conv_dy, float* dx,
                               float* dw, float* db,
                               const ra::backend::ConvPoolBackwardModes& modes) override {
    ++pair_backward;
    inner().conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db, modes);
  }
  void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      ra::backend::Activation act, float* y) override {
    ++conv_forward;
    ForwardingOps::conv2d_forward(g, x, w, bias, act, y);
  }
  void maxpool2d_forward(const PoolGeometry& g, const float* x, float* y,
                         std::int32_t* argmax) override {
    ++pool_forward;
    ForwardingOps::maxpool2d_forward(g, x, y, argmax);
  }

 private:
  bool answer_;
};

// conv (with `activation`) -> 2x2/2 max-pool -> flatten -> dense.
ra::spec::ExperimentSpec conv_pool_spec(const std::string& activation) {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [2, 10, 10], "classes": 3}},
    "model": {"input": [2, 10, 10], "layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3, "activation": ")" +
                                                    activation + R"("},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"}, {"type": "dense", "units": 3}]}})"),
                              ".");
}

struct StepResult {
  std::vector<float> output, grads;
};

// One forward and backward step; the output and every parameter gradient.
StepResult step(const ra::spec::ExperimentSpec& spec, ra::backend::Ops& ops) {
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {3, 4});
  ra::Tensor x({4, 2, 10, 10});
  for (std::size_t i = 0; i < x.size(); ++i) {
    x.data()[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  }
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  ra::nn::StepContext ctx{true, 0, &spec.determinism};
  const ra::Tensor& out = model.forward(ops, x, ctx);
  StepResult r;
  r.output.assign(out.data(), out.data() + out.size());
  ra::Tensor dout;
  ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
  model.backward(ops, dout, ctx);
  for (const ra::nn::Param* p : model.params()) {
    r.grads.insert(r.grads.end(), p->grad.data(), p->grad.data() + p->grad.size());
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("a conv and its max-pool run as one call when the backend says it fuses them",
          "[nn][fusion]") {
  const auto spec = conv_pool_spec("relu");
  FusionSpy yes(true), no(false);
  const StepResult fused = step(spec, yes);
  const StepResult separate = step(spec, no);

  // Asked with the pair's geometries for the pass's batch.
  REQUIRE(yes.asked.size() == 1);
  const auto& [g, pool] = yes.asked[0];
  CHECK(g.n == 4);
  CHECK(g.c == 2);
  CHECK(g.k == 8);
  CHECK(g.p == 8);
  CHECK(g.q == 8);
  CHECK(pool.n == 4);
  CHECK(pool.c == 8);
  CHECK(pool.pool_h == 2);
  CHECK(pool.stride_h == 2);

  CHECK(yes.pair_forward == 1);
  CHECK(yes.pair_backward == 1);
  CHECK(yes.conv_forward == 0);
  CHECK(yes.pool_forward == 0);

  REQUIRE(no.asked.size() == 1);
  CHECK(no.pair_forward == 0);
  CHECK(no.pair_backward == 0);
  CHECK(no.conv_forward == 1);
  CHECK(no.pool_forward == 1);

  CHECK(same_bits(fused.output, separate.output));
  CHECK(same_bits(fused.grads, separate.grads));
}

TEST_CASE("a conv whose output its backward reads is never fused with its max-pool",
          "[nn][fusion]") {
  // tanh's backward reads the conv output, which a fused forward need not store.
  FusionSpy yes(true);
  step(conv_pool_spec("tanh"), yes);
  CHECK(yes.asked.empty());
  CHECK(yes.pair_forward == 0);
  CHECK(yes.pair_backward == 0);
  CHECK(yes.conv_forward == 1);
  CHECK(yes.pool_forward == 1);
}

TEST_CASE("the CPU backend fuses the pools its direct convolution computes", "[nn][fusion]") {
  ra::backend::cpu::CpuOps cpu(1);
  const auto spec = conv_pool_spec("relu");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {3, 4});
  const auto& conv = model.layers()[0]->info();
  const auto& pool = model.layers()[1]->info();
  const ConvGeometry g = ra::nn::conv_geometry(conv, 4);
  const PoolGeometry p = ra::nn::pool_geometry(pool, 4);
  CHECK(cpu.fuses_conv_maxpool(g, p));
  PoolGeometry overlapping = p;  // 2x2 windows, stride 1: not a pool the conv computes
  overlapping.stride_h = overlapping.stride_w = 1;
  overlapping.p = g.p - 1;
  overlapping.q = g.q - 1;
  CHECK_FALSE(cpu.fuses_conv_maxpool(g, overlapping));
}
