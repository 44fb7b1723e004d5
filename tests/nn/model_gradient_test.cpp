// The assembled model's backward pass against central finite differences of its loss, through
// every layer kind at once (conv with fused activation, pooling, dropout, flatten, activation
// layer, dense), and the parameter layout/initialisation contracts.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_ops.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "nn/model_digest.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "support/forwarding_ops.h"

namespace {

ra::spec::ExperimentSpec small_spec(const std::string& loss) {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [2, 7, 7], "classes": 3}},
    "model": {"input": [2, 7, 7], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same", "activation": "tanh"},
      {"type": "maxpool2d", "pool": 2},
      {"type": "dropout", "rate": 0.3},
      {"type": "flatten"},
      {"type": "dense", "units": 5, "activation": "sigmoid"},
      {"type": "tanh"},
      {"type": "dense", "units": 3}]},
    "loss": ")" + loss + R"("})"),
                              ".");
}

ra::Tensor random_input(ra::Shape shape, unsigned seed) {
  ra::Tensor t(shape);
  std::uint32_t s = seed;
  for (float& v : t) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return t;
}

// One training step's gradients of every parameter, then every buffer (running statistics), of
// `spec`'s model on `ops`, in the model's order.
std::vector<float> step_gradients_and_buffers(const ra::spec::ExperimentSpec& spec,
                                              ra::backend::Ops& ops, const ra::Tensor& x,
                                              const std::vector<std::int32_t>& labels) {
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
  ra::nn::StepContext ctx{true, 3, &spec.determinism};
  ra::Tensor dout;
  const ra::Tensor& out = model.forward(ops, x, ctx);
  ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
  model.backward(ops, dout, ctx);
  std::vector<float> values;
  for (ra::nn::Param* p : model.params()) {
    values.insert(values.end(), p->grad.begin(), p->grad.end());
  }
  for (ra::nn::NamedBuffer* b : model.buffers()) {
    values.insert(values.end(), b->value.begin(), b->value.end());
  }
  return values;
}

}  // namespace

namespace {

// The model's backward pass against central differences of its loss, for each loss.
void check_model_gradients(
    const std::function<ra::spec::ExperimentSpec(const std::string&)>& spec_of) {
  for (const std::string loss : {"softmax_cross_entropy", "mean_squared_error"}) {
    INFO(loss);
    const auto spec = spec_of(loss);
    ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
    ra::backend::cpu::CpuOps ops(2);
    const ra::Tensor x = random_input({4, 2, 7, 7}, 99);
    const std::vector<std::int32_t> labels{0, 2, 1, 2};
    ra::nn::StepContext ctx{true, 17, &spec.determinism};

    ra::Tensor dout;
    const ra::Tensor& out = model.forward(ops, x, ctx);
    ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
    model.backward(ops, dout, ctx);

    // Central differences with the same dropout mask (same step). The loss is smooth in the
    // parameters except where a max-pool window switches its winner; a step of h = 1e-3 crosses
    // such a kink for a few elements (measured: conv2d_0.weight[7] switches within +7e-4). There
    // the central difference mixes two slopes, while the analytic gradient is the slope on the
    // current side; so an element passes when it matches the central difference, or, when the
    // forward and backward differences disagree (a kink), one of them. Float forward passes carry
    // ~1e-7 relative error, so with h = 1e-3 a difference quotient is good to ~2e-4 absolute.
    auto loss_at = [&] {
      const ra::Tensor& o = model.forward(ops, x, ctx);
      return static_cast<double>(ra::nn::compute_loss(ops, spec.loss, o, labels, nullptr,
                                                      ra::spec::KernelMode::deterministic));
    };
    auto close = [](double numeric, double analytic) {
      return std::abs(numeric - analytic) <= 2e-4 + 2e-2 * std::abs(numeric);
    };
    const double base = loss_at();
    int checked = 0, kinks = 0;
    for (ra::nn::Param* p : model.params()) {
      const ra::Tensor analytic = p->grad;
      const std::size_t stride = std::max<std::size_t>(1, p->value.size() / 7);
      for (std::size_t i = 0; i < p->value.size(); i += stride) {
        const float saved = p->value[i];
        const double h = 1e-3;
        p->value[i] = static_cast<float>(saved + h);
        const double up = loss_at();
        p->value[i] = static_cast<float>(saved - h);
        const double down = loss_at();
        p->value[i] = saved;
        const double central = (up - down) / (2 * h);
        const double forward = (up - base) / h, backward = (base - down) / h;
        INFO(p->name << "[" << i << "] analytic " << analytic[i] << " central " << central
                     << " forward " << forward << " backward " << backward);
        if (!close(central, analytic[i])) {
          REQUIRE_FALSE(close(forward, backward));  // only a kink excuses a central mismatch
          REQUIRE((close(forward, analytic[i]) || close(backward, analytic[i])));
          ++kinks;
        }
        ++checked;
      }
    }
    REQUIRE(kinks <= 3);
    REQUIRE(checked >= 30);
  }
}

// Batch normalisation (training statistics) and global average pooling between a conv and the
// dense layer: the layers of a ResNet v2's stem and head.
ra::spec::ExperimentSpec channel_spec(const std::string& loss) {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [2, 7, 7], "classes": 3}},
    "model": {"input": [2, 7, 7], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"},
      {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001},
      {"type": "tanh"},
      {"type": "global_avgpool"},
      {"type": "dense", "units": 3}]},
    "loss": ")" + loss + R"("})"),
                              ".");
}

// Two residual blocks: pre-activation v2 (batchnorm, relu, conv; identity shortcut) and one that
// halves the image and doubles the channels with a strided 1x1 projection and a relu after the add.
ra::spec::ExperimentSpec residual_spec(const std::string& loss) {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [2, 7, 7], "classes": 3}},
    "model": {"input": [2, 7, 7], "layers": [
      {"type": "residual", "name": "v2", "layers": [
        {"type": "batchnorm"}, {"type": "relu"},
        {"type": "conv2d", "filters": 2, "kernel": 3, "padding": "same"}]},
      {"type": "residual", "name": "down", "activation": "tanh", "layers": [
        {"type": "conv2d", "filters": 3, "kernel": 3, "stride": 2, "padding": "same",
         "activation": "tanh"}],
       "shortcut": {"filters": 3, "stride": 2}},
      {"type": "global_avgpool"},
      {"type": "dense", "units": 3}]},
    "loss": ")" + loss + R"("})"),
                              ".");
}

}  // namespace

TEST_CASE("model gradients match finite differences of the loss", "[nn]") {
  check_model_gradients(small_spec);
}

TEST_CASE("gradients through batchnorm and global_avgpool match finite differences", "[nn]") {
  check_model_gradients(channel_spec);
}

TEST_CASE("gradients through residual blocks match finite differences", "[nn]") {
  check_model_gradients(residual_spec);
}

TEST_CASE("parameters use PyTorch names and layouts", "[nn]") {
  const auto spec = small_spec("softmax_cross_entropy");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {1, 1});
  const auto& ps = model.params();
  REQUIRE(ps.size() == 6);
  REQUIRE(ps[0]->name == "conv2d_0.weight");
  REQUIRE(ps[0]->value.shape() == ra::Shape{3, 2, 3, 3});
  REQUIRE(ps[1]->name == "conv2d_0.bias");
  REQUIRE(ps[2]->name == "dense_0.weight");
  REQUIRE(ps[2]->value.shape() == ra::Shape{5, 27});
  REQUIRE(ps[4]->value.shape() == ra::Shape{3, 5});
  // Biases start at zero, weights within the Glorot limit sqrt(6 / (fan_in + fan_out)).
  for (float b : ps[1]->value) REQUIRE(b == 0.0f);
  const float limit = std::sqrt(6.0f / (2 * 9 + 3 * 9));
  for (float w : ps[0]->value) REQUIRE(std::abs(w) <= limit);
}

TEST_CASE("initial weights depend on the init seed only", "[nn]") {
  const auto spec = small_spec("softmax_cross_entropy");
  const auto resolved = ra::spec::resolve_model(spec.model);
  const auto a = ra::nn::parameters_digest(ra::nn::Model(resolved, {1, 1}));
  const auto b = ra::nn::parameters_digest(ra::nn::Model(resolved, {1, 2}));
  const auto c = ra::nn::parameters_digest(ra::nn::Model(resolved, {2, 1}));
  REQUIRE(a == b);  // the dropout seed does not touch initialisation
  REQUIRE(a != c);
}

TEST_CASE("dropout is identity in evaluation and masks by step in training", "[nn]") {
  const auto spec = small_spec("softmax_cross_entropy");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {3, 4});
  ra::backend::cpu::CpuOps ops(1);
  const ra::Tensor x = random_input({2, 2, 7, 7}, 5);
  auto run = [&](bool training, std::uint64_t step) {
    ra::nn::StepContext ctx{training, step, &spec.determinism};
    return ra::Tensor(model.forward(ops, x, ctx));
  };
  REQUIRE(ra::bitwise_equal(run(false, 1), run(false, 2)));
  REQUIRE(ra::bitwise_equal(run(true, 1), run(true, 1)));
  REQUIRE_FALSE(ra::bitwise_equal(run(true, 1), run(true, 2)));
  REQUIRE_FALSE(ra::bitwise_equal(run(true, 1), run(false, 1)));
}

TEST_CASE("a max-pool or conv after a relu layer takes over its relu backward with the same bits",
          "[nn]") {
  // A: convs with fused relu, then max-pool (the model hands each relu backward to the next
  // layer's gate). B: the same convs without activation, relu layers, then max-pool (each relu
  // layer hands its backward over in the same way).
  // Same parameter names, so the same initial weights: gradients must be bit for bit equal.
  auto spec_of = [](const char* conv_and_relu) {
    return ra::spec::parse_spec(nlohmann::json::parse(std::string(R"({
      "data": {"train": {"format": "random", "samples": 8, "shape": [2, 9, 9], "classes": 3}},
      "model": {"input": [2, 9, 9], "layers": [)") + conv_and_relu +
                                                      R"(,
        {"type": "maxpool2d", "pool": 3, "stride": 2},
        {"type": "flatten"},
        {"type": "dense", "units": 3}]}})"),
                                ".");
  };
  // Two convs: the second takes over the first one's relu backward (gated by its input), the
  // max-pool the second one's.
  const auto fused = spec_of(R"({"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same",
                                "activation": "relu"},
                               {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same",
                                "activation": "relu"})");
  const auto separate = spec_of(R"({"type": "conv2d", "filters": 3, "kernel": 3,
                                   "padding": "same"}, {"type": "relu"},
                                  {"type": "conv2d", "filters": 4, "kernel": 3,
                                   "padding": "same"}, {"type": "relu"})");
  const ra::Tensor x = random_input({4, 2, 9, 9}, 7);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  auto gradients = [&](const ra::spec::ExperimentSpec& spec) {
    ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
    ra::backend::cpu::CpuOps ops(2);
    ra::nn::StepContext ctx{true, 3, &spec.determinism};
    ra::Tensor dout;
    const ra::Tensor& out = model.forward(ops, x, ctx);
    ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
    model.backward(ops, dout, ctx);
    std::vector<std::pair<std::string, std::vector<float>>> grads;
    for (ra::nn::Param* p : model.params()) {
      grads.emplace_back(p->name, std::vector<float>(p->grad.begin(), p->grad.end()));
    }
    return grads;
  };
  const auto a = gradients(fused), b = gradients(separate);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    REQUIRE(a[i].second.size() == b[i].second.size());
    REQUIRE(std::memcmp(a[i].second.data(), b[i].second.data(),
                        a[i].second.size() * sizeof(float)) == 0);
  }
}

namespace {
// Counts relu backward passes and records which gradient ops got a relu gate.
class GateSpy final : public ra::test::ForwardingOps {
 public:
  int relu_backward_calls = 0;
  int gated_conv_backward_data = 0, gated_maxpool_backward = 0;
  int batchnorm_backward_adds = 0, residual_adds = 0;
  void batchnorm_backward_add(const ra::backend::ChannelGeometry& g, const float* x,
                              const float* dy, const float* gamma, const float* mean,
                              const float* inv_std, const float* addend, float* dx, float* dgamma,
                              float* dbeta, ra::backend::KernelMode m) override {
    ++batchnorm_backward_adds;
    ForwardingOps::batchnorm_backward_add(g, x, dy, gamma, mean, inv_std, addend, dx, dgamma, dbeta,
                                          m);
  }
  void residual_add(std::int64_t n, const float* a, const float* b, float* y) override {
    ++residual_adds;
    ForwardingOps::residual_add(n, a, b, y);
  }
  void activation_backward(ra::backend::Activation a, std::int64_t n, const float* y,
                           const float* dy, float* dx) override {
    if (a == ra::backend::Activation::relu) ++relu_backward_calls;
    ForwardingOps::activation_backward(a, n, y, dy, dx);
  }
  void conv2d_backward_data(const ra::backend::ConvGeometry& g, const float* dy, const float* w,
                            const float* gate, float* dx, ra::backend::KernelMode m) override {
    if (gate != nullptr) ++gated_conv_backward_data;
    ForwardingOps::conv2d_backward_data(g, dy, w, gate, dx, m);
  }
  void maxpool2d_backward(const ra::backend::PoolGeometry& g, const float* dy,
                          const std::int32_t* argmax, const float* gate, float* dx,
                          ra::backend::KernelMode m) override {
    if (gate != nullptr) ++gated_maxpool_backward;
    ForwardingOps::maxpool2d_backward(g, dy, argmax, gate, dx, m);
  }
};
}  // namespace

TEST_CASE("the model hands a relu backward to the max-pool or conv after it", "[nn]") {
  // conv(relu) -> conv(relu) -> maxpool -> dense: the second conv gates the first one's relu
  // backward, the max-pool the second one's, and no relu backward pass runs; with a dense relu
  // before the output (nothing can take it over) exactly one does.
  auto spec_of = [](const char* dense_activation) {
    return ra::spec::parse_spec(nlohmann::json::parse(std::string(R"({
      "data": {"train": {"format": "random", "samples": 8, "shape": [2, 9, 9], "classes": 3}},
      "model": {"input": [2, 9, 9], "layers": [
        {"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same", "activation": "relu"},
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same", "activation": "relu"},
        {"type": "maxpool2d", "pool": 3, "stride": 2},
        {"type": "flatten"},
        {"type": "dense", "units": 5, "activation": ")") +
                                                      dense_activation + R"("},
        {"type": "dense", "units": 3}]}})"),
                                ".");
  };
  const ra::Tensor x = random_input({4, 2, 9, 9}, 7);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  for (const char* dense_activation : {"none", "relu"}) {
    INFO(dense_activation);
    const auto spec = spec_of(dense_activation);
    ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
    GateSpy ops;
    ra::nn::StepContext ctx{true, 3, &spec.determinism};
    ra::Tensor dout;
    const ra::Tensor& out = model.forward(ops, x, ctx);
    ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
    model.backward(ops, dout, ctx);
    REQUIRE(ops.gated_maxpool_backward == 1);
    REQUIRE(ops.gated_conv_backward_data == 1);
    REQUIRE(ops.relu_backward_calls == (std::string(dense_activation) == "relu" ? 1 : 0));
  }
}

TEST_CASE("batchnorm and relu run as one call, the relu's backward in the conv's", "[nn]") {
  // Pre-activation blocks (batchnorm, relu, conv) at the top level and inside a residual body:
  // each batchnorm and its relu run forward as one backend call (the CPU backend's fused pass),
  // and each relu hands its backward to the conv after it. Against the same model with an
  // identity (a dropout of rate 0) before and after each relu, which pairs and hands over
  // nothing: the same gradients and running statistics bit for bit, and no relu backward pass.
  auto spec_of = [](bool identities) {
    const std::string identity = identities ? R"({"type": "dropout", "rate": 0.0})" : "";
    const std::string relu = identities ? identity + R"(, {"type": "relu"}, )" + identity
                                        : std::string(R"({"type": "relu"})");
    return ra::spec::parse_spec(nlohmann::json::parse(R"({
      "data": {"train": {"format": "random", "samples": 8, "shape": [2, 8, 8], "classes": 3}},
      "model": {"input": [2, 8, 8], "layers": [
        {"type": "batchnorm"}, )" + relu + R"(,
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"},
        {"type": "residual", "name": "block", "layers": [
          {"type": "batchnorm"}, )" + relu + R"(,
          {"type": "conv2d", "filters": 3, "kernel": 1, "padding": "same"},
          {"type": "batchnorm"}, )" + relu + R"(,
          {"type": "conv2d", "filters": 6, "kernel": 3, "padding": "same"}],
         "shortcut": {"filters": 6, "stride": 1}},
        {"type": "global_avgpool"},
        {"type": "dense", "units": 3}]}})"),
                                ".");
  };
  const ra::Tensor x = random_input({4, 2, 8, 8}, 11);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  auto run = [&](const ra::spec::ExperimentSpec& spec, ra::backend::Ops& ops) {
    return step_gradients_and_buffers(spec, ops, x, labels);
  };
  const auto paired = spec_of(false), separate = spec_of(true);
  ra::backend::cpu::CpuOps cpu(2);
  const auto a = run(paired, cpu), b = run(separate, cpu);
  REQUIRE(a.size() == b.size());
  REQUIRE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  GateSpy spy_paired, spy_separate;
  run(paired, spy_paired);
  run(separate, spy_separate);
  REQUIRE(spy_paired.relu_backward_calls == 0);
  REQUIRE(spy_separate.relu_backward_calls == 3);
}

TEST_CASE("a residual body's first batchnorm adds the identity shortcut's gradient", "[nn]") {
  // Two blocks with identity shortcuts whose bodies start with batchnorm: its backward adds the
  // block's output gradient into the input gradient it stores (one call, no add of its own).
  // Against the same blocks with a dropout of rate 0 first: the same gradients, bit for bit.
  auto spec_of = [](bool identity_first) {
    const std::string head = identity_first ? R"({"type": "dropout", "rate": 0.0}, )" : "";
    const std::string body = R"("layers": [)" + head + R"({"type": "batchnorm"}, {"type": "relu"},
        {"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same"}]})";
    return ra::spec::parse_spec(nlohmann::json::parse(R"({
      "data": {"train": {"format": "random", "samples": 8, "shape": [3, 6, 6], "classes": 3}},
      "model": {"input": [3, 6, 6], "layers": [
        {"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same"},
        {"type": "residual", "name": "a", )" + body + R"(,
        {"type": "residual", "name": "b", )" + body + R"(,
        {"type": "global_avgpool"},
        {"type": "dense", "units": 3}]}})"),
                                ".");
  };
  const ra::Tensor x = random_input({4, 3, 6, 6}, 13);
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  auto run = [&](const ra::spec::ExperimentSpec& spec, ra::backend::Ops& ops) {
    return step_gradients_and_buffers(spec, ops, x, labels);
  };
  ra::backend::cpu::CpuOps cpu(2);
  const auto a = run(spec_of(false), cpu), b = run(spec_of(true), cpu);
  REQUIRE(a.size() == b.size());
  REQUIRE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  GateSpy fused, separate;
  run(spec_of(false), fused);
  run(spec_of(true), separate);
  // Block a's input gradient is needed (a conv before it), block b's too; the first block's input
  // is the conv's output, so both blocks add.
  REQUIRE(fused.batchnorm_backward_adds == 2);
  REQUIRE(separate.batchnorm_backward_adds == 0);
  REQUIRE(fused.residual_adds == separate.residual_adds);  // the composite's parts, when observed
}

TEST_CASE("a flatten passes its input through to the next layer and its gradient back", "[nn]") {
  // The Model hands a flatten's input to the next layer and the next layer's input gradient back
  // (Layer::is_reshape): an MLP behind a leading flatten gives the bits of its two dense layers
  // called on the unflattened input, and the first dense layer's input gradient (the model
  // input's) is not computed. A flatten between layers is covered by the finite differences above.
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
      "data": {"train": {"format": "random", "samples": 8, "shape": [2, 3, 3], "classes": 3}},
      "model": {"input": [2, 3, 3], "layers": [{"type": "flatten"},
        {"type": "dense", "units": 5, "activation": "relu"}, {"type": "dense", "units": 3}]}})"),
                                         ".");
  struct CountingOps final : ra::test::ForwardingOps {
    int dense_data_calls = 0;
    void dense_backward_data(const ra::backend::DenseGeometry& g, const float* dy, const float* w,
                             float* dx, ra::backend::KernelMode m) override {
      ++dense_data_calls;
      ForwardingOps::dense_backward_data(g, dy, w, dx, m);
    }
  };
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
  const ra::Tensor x = random_input({4, 2, 3, 3}, 7);
  CountingOps ops;
  ra::nn::StepContext ctx{true, 0, &spec.determinism};
  const ra::Tensor& out = model.forward(ops, x, ctx);
  REQUIRE(out.shape() == ra::Shape{4, 3});
  const auto& p = model.params();  // dense_0 weight, bias, dense_1 weight, bias
  std::vector<float> hidden(4 * 5), expected(4 * 3);
  ops.dense_forward({4, 18, 5}, x.data(), p[0]->value.data(), p[1]->value.data(),
                    ra::backend::Activation::relu, hidden.data());
  ops.dense_forward({4, 5, 3}, hidden.data(), p[2]->value.data(), p[3]->value.data(),
                    ra::backend::Activation::none, expected.data());
  REQUIRE(std::memcmp(out.data(), expected.data(), out.bytes()) == 0);
  ra::Tensor dout;
  const std::vector<std::int32_t> labels{0, 2, 1, 2};
  ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
  model.backward(ops, dout, ctx);
  REQUIRE(ops.dense_data_calls == 1);  // dense_1's input gradient only
}

TEST_CASE("a flatten as the last layer still shapes the model output", "[nn]") {
  const auto spec = ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [1, 2, 3], "classes": 4}},
    "model": {"input": [1, 2, 3], "layers": [{"type": "flatten"}, {"type": "dense", "units": 4},
                                              {"type": "flatten"}]}})"),
                                         ".");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {1, 2});
  ra::backend::cpu::CpuOps ops(1);
  ra::nn::StepContext ctx{true, 0, &spec.determinism};
  const ra::Tensor x = random_input({3, 1, 2, 3}, 5);
  const ra::Tensor& out = model.forward(ops, x, ctx);
  REQUIRE(out.shape() == ra::Shape{3, 4});
  ra::Tensor dout;
  const std::vector<std::int32_t> labels{0, 3, 1};
  ra::nn::compute_loss(ops, spec.loss, out, labels, &dout, ra::spec::KernelMode::deterministic);
  model.backward(ops, dout, ctx);
  REQUIRE(model.params()[0]->grad.shape() == ra::Shape{4, 6});
}

TEST_CASE("a residual block's parameters and buffers carry its name before theirs", "[nn]") {
  const auto spec = residual_spec("softmax_cross_entropy");
  ra::nn::Model model(ra::spec::resolve_model(spec.model), {5, 6});
  std::vector<std::string> names;
  for (const ra::nn::Param* p : model.params()) names.push_back(p->name);
  REQUIRE(names == std::vector<std::string>{"v2.batchnorm_0.weight", "v2.batchnorm_0.bias",
                                            "v2.conv2d_0.weight", "v2.conv2d_0.bias",
                                            "down.conv2d_0.weight", "down.conv2d_0.bias",
                                            "down.shortcut.weight", "down.shortcut.bias",
                                            "dense_0.weight", "dense_0.bias"});
  REQUIRE(model.buffers().size() == 2);
  REQUIRE(model.buffers()[0]->name == "v2.batchnorm_0.running_mean");
  // The projection is a 1x1 conv: [filters, channels, 1, 1], PyTorch's layout.
  REQUIRE(model.params()[6]->value.shape() == ra::Shape{3, 2, 1, 1});
}
