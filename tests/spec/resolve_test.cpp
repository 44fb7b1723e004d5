// resolve_model: shapes, "same" pads, parameters and FLOPs against values worked out by hand, and
// a brute-force check of the TensorFlow padding rule.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::Shape;
using ra::spec::test::json;

namespace {

LayerSpec conv(int filters, int kh, int kw, int sh, int sw, Padding padding,
               Activation act = Activation::none) {
  LayerSpec l;
  l.type = LayerType::conv2d;
  l.filters = filters;
  l.kernel_h = kh;
  l.kernel_w = kw;
  l.stride_h = sh;
  l.stride_w = sw;
  l.padding = padding;
  l.activation = act;
  return l;
}
LayerSpec pool(int p, Padding padding = Padding::valid) {
  LayerSpec l;
  l.type = LayerType::maxpool2d;
  l.pool_h = l.pool_w = l.stride_h = l.stride_w = p;
  l.padding = padding;
  return l;
}
LayerSpec dense(int units, Activation act = Activation::none) {
  LayerSpec l;
  l.type = LayerType::dense;
  l.units = units;
  l.activation = act;
  return l;
}
LayerSpec of_type(LayerType type, float rate = 0.0f) {
  LayerSpec l;
  l.type = type;
  l.rate = rate;
  if (type == LayerType::activation) l.activation = Activation::relu;
  return l;
}

std::vector<ra::Problem> resolve_problems(const ModelSpec& m) {
  try {
    resolve_model(m);
  } catch (const ra::ValidationError& e) {
    return e.problems();
  }
  FAIL("resolve_model accepted the model");
  return {};
}

}  // namespace

// The Keras mnist_cnn.py example on [1, 28, 28].
TEST_CASE("Keras MNIST convnet: shapes, parameters and FLOPs by hand", "[spec]") {
  ModelSpec m;
  m.input = {1, 28, 28};
  m.layers = {conv(32, 3, 3, 1, 1, Padding::valid, Activation::relu),
              conv(64, 3, 3, 1, 1, Padding::valid, Activation::relu),
              pool(2),
              of_type(LayerType::dropout, 0.25f),
              of_type(LayerType::flatten),
              dense(128, Activation::relu),
              of_type(LayerType::dropout, 0.5f),
              dense(10)};
  const ResolvedModel r = resolve_model(m);
  REQUIRE(r.layers.size() == 8);
  const std::vector<std::string> names{"conv2d_0",  "conv2d_1", "maxpool2d_0", "dropout_0",
                                       "flatten_0", "dense_0",  "dropout_1",   "dense_1"};
  const std::vector<Shape> outputs{{32, 26, 26}, {64, 24, 24}, {64, 12, 12}, {64, 12, 12},
                                   {9216},       {128},        {128},        {10}};
  // conv: K*C*R*S + K; dense: OUT*IN + OUT.
  const std::vector<std::int64_t> params{32 * 1 * 9 + 32,   // 320
                                         64 * 32 * 9 + 64,  // 18,496
                                         0,
                                         0,
                                         0,
                                         128 * 9216 + 128,  // 1,179,776
                                         0,
                                         10 * 128 + 10};  // 1,290
  // conv: 2*K*C*R*S*P*Q + K*P*Q (bias) + K*P*Q (relu); pool: 2*2*C*P*Q; dropout: one per
  // element; dense: 2*IN*OUT + OUT (bias) (+ OUT for relu).
  const std::vector<std::int64_t> flops{2LL * 32 * 1 * 9 * 676 + 21632 + 21632,   // 432,640
                                        2LL * 64 * 32 * 9 * 576 + 36864 + 36864,  // 21,307,392
                                        4LL * 64 * 144,                           // 36,864
                                        9216,
                                        0,
                                        2LL * 9216 * 128 + 128 + 128,  // 2,359,552
                                        128,
                                        2LL * 128 * 10 + 10};  // 2,570
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    INFO("layer " << i);
    CHECK(r.layers[i].spec.name == names[i]);
    CHECK(r.layers[i].input == (i == 0 ? Shape{1, 28, 28} : outputs[i - 1]));
    CHECK(r.layers[i].output == outputs[i]);
    CHECK(r.layers[i].params == params[i]);
    CHECK(r.layers[i].flops == flops[i]);
  }
  CHECK(params[0] == 320);
  CHECK(params[1] == 18496);
  CHECK(params[5] == 1179776);
  CHECK(params[7] == 1290);
  CHECK(r.params == 1199882);
  CHECK(r.flops == 24148362);
  CHECK(r.input == Shape{1, 28, 28});
  CHECK(r.output == Shape{10});
}

TEST_CASE("same padding follows the TensorFlow rule", "[spec]") {
  struct Case {
    int in, k, stride, out, before, after;
  };
  // out = ceil(in / stride); total = max((out - 1) * stride + k - in, 0); before = total / 2.
  const Case cases[] = {
      {28, 3, 2, 14, 0, 1},  // total 13*2 + 3 - 28 = 1
      {7, 3, 2, 4, 1, 1},    // total 3*2 + 3 - 7 = 2
      {7, 2, 2, 4, 0, 1},    // total 3*2 + 2 - 7 = 1
      {8, 5, 3, 3, 1, 2},    // total 2*3 + 5 - 8 = 3
      {5, 1, 2, 3, 0, 0},    // total 2*2 + 1 - 5 = 0
      {3, 5, 1, 3, 2, 2},    // total 2 + 5 - 3 = 4: a kernel wider than its input is padded to fit
      {28, 3, 1, 28, 1, 1},  // total 27 + 3 - 28 = 2
  };
  for (const Case& c : cases) {
    INFO("in " << c.in << " k " << c.k << " stride " << c.stride);
    ModelSpec m;
    m.input = {2, c.in, 1};
    m.layers = {conv(3, c.k, 1, c.stride, 1, Padding::same)};
    const ResolvedLayer l = resolve_model(m).layers[0];
    CHECK(l.output == Shape{3, c.out, 1});
    CHECK(l.pad_top == c.before);
    CHECK(l.pad_bottom == c.after);
    CHECK(l.pad_left == 0);
    CHECK(l.pad_right == 0);
  }
  // Height and width are independent: [2, 7, 28] with kernel [3, 2], stride 2.
  ModelSpec m;
  m.input = {2, 7, 28};
  m.layers = {conv(5, 3, 2, 2, 2, Padding::same)};
  const ResolvedLayer l = resolve_model(m).layers[0];
  CHECK(l.output == Shape{5, 4, 14});
  CHECK((l.pad_top == 1 && l.pad_bottom == 1 && l.pad_left == 0 && l.pad_right == 0));
  CHECK(l.params == 5 * 2 * 3 * 2 + 5);
  CHECK(l.flops == 2LL * 5 * 2 * 3 * 2 * 4 * 14 + 5 * 4 * 14);
}

TEST_CASE("same padding: every window overlaps the input and pads stay below the kernel",
          "[spec]") {
  // Brute force over small geometries: place the windows as the kernels will and check them.
  for (int in = 1; in <= 20; ++in) {
    for (int k = 1; k <= 6; ++k) {
      for (int stride = 1; stride <= 4; ++stride) {
        ModelSpec m;
        m.input = {1, in, in};
        m.layers = {conv(1, k, k, stride, stride, Padding::same)};
        const ResolvedLayer l = resolve_model(m).layers[0];
        const std::int64_t out = l.output[1];
        INFO("in " << in << " k " << k << " stride " << stride);
        // Outputs: one per stride step started inside the input.
        std::int64_t starts = 0;
        for (int x = 0; x < in; x += stride) ++starts;
        REQUIRE(out == starts);
        REQUIRE(l.pad_top <= l.pad_bottom);
        REQUIRE(l.pad_bottom - l.pad_top <= 1);
        REQUIRE(l.pad_bottom < k);
        for (std::int64_t j = 0; j < out; ++j) {
          const std::int64_t first = j * stride - l.pad_top, last = first + k - 1;
          REQUIRE(last >= 0);  // touches a real cell...
          REQUIRE(first < in);
          REQUIRE(last <= in - 1 + l.pad_bottom);  // ...and stays inside the padded input
        }
        // The last window reaches the end of the padding exactly when there is padding.
        if (l.pad_top + l.pad_bottom > 0) {
          REQUIRE((out - 1) * stride - l.pad_top + k == in + l.pad_bottom);
        }
      }
    }
  }
}

TEST_CASE("max pooling: valid, same and overlapping windows", "[spec]") {
  ModelSpec m;
  m.input = {3, 5, 5};
  m.layers = {pool(2, Padding::same)};
  ResolvedLayer l = resolve_model(m).layers[0];
  CHECK(l.output == Shape{3, 3, 3});  // ceil(5 / 2); total 2*2 + 2 - 5 = 1
  CHECK((l.pad_top == 0 && l.pad_bottom == 1 && l.pad_left == 0 && l.pad_right == 1));
  CHECK(l.flops == 2 * 2 * 3 * 3 * 3);
  CHECK(l.params == 0);

  m.layers = {pool(2)};
  CHECK(resolve_model(m).layers[0].output == Shape{3, 2, 2});  // floor((5 - 2) / 2) + 1

  m.input = {1, 12, 12};
  m.layers = {pool(3)};
  m.layers[0].stride_h = m.layers[0].stride_w = 2;
  CHECK(resolve_model(m).layers[0].output == Shape{1, 5, 5});  // floor((12 - 3) / 2) + 1
}

TEST_CASE("element-wise layers and flatten", "[spec]") {
  ModelSpec m;
  m.input = {2, 3, 4};
  m.layers = {of_type(LayerType::activation), of_type(LayerType::dropout, 0.5f),
              of_type(LayerType::flatten), of_type(LayerType::flatten), dense(6, Activation::tanh)};
  m.layers[2].name = "flat";
  const ResolvedModel r = resolve_model(m);
  CHECK(r.layers[0].output == Shape{2, 3, 4});
  CHECK(r.layers[0].flops == 24);
  CHECK(r.layers[1].flops == 24);
  CHECK(r.layers[2].output == Shape{24});
  CHECK(r.layers[2].flops == 0);
  CHECK(r.layers[3].output == Shape{24});  // flattening a flat input changes nothing
  CHECK(r.layers[4].params == 24 * 6 + 6);
  CHECK(r.layers[4].flops == 2 * 24 * 6 + 6 + 6);
  CHECK(r.layers[0].spec.name == "activation_0");
  CHECK(r.layers[2].spec.name == "flat");
  CHECK(r.layers[3].spec.name == "flatten_1");

  // Without bias, a dense layer is 2*IN*OUT FLOPs and OUT*IN parameters.
  m.layers = {of_type(LayerType::flatten), dense(6)};
  m.layers[1].use_bias = false;
  CHECK(resolve_model(m).layers[1].params == 24 * 6);
  CHECK(resolve_model(m).layers[1].flops == 2 * 24 * 6);
}

TEST_CASE("resolve_model rejects impossible models built in code", "[spec]") {
  ModelSpec m;
  m.input = {1, 3, 3};
  m.layers = {conv(4, 5, 5, 1, 1, Padding::valid)};
  auto problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[0]");

  m.layers = {conv(0, 1, 1, 1, 1, Padding::valid)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[0].filters");

  m.layers = {of_type(LayerType::flatten), conv(1, 1, 1, 1, 1, Padding::valid)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[1]");

  m.layers = {dense(3)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[0]");
  CHECK(problems[0].message.find("add a flatten layer") != std::string::npos);

  m.layers = {};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers");

  m.input = {9};
  m.layers = {dense(3)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.input");

  m.input = {1, 4, 4};
  m.layers = {of_type(LayerType::flatten), of_type(LayerType::flatten)};
  m.layers[1].name = "flatten_0";
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[1].name");

  // Fields past their limits (spec/limits.h) are reported at the field.
  m.input = {1, 1, 1};
  m.layers = {conv(1 << 30, 1 << 30, 1 << 30, 1, 1, Padding::same)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].path == "model.layers[0].filters");
  CHECK(problems[1].path == "model.layers[0].kernel");

  // Counts that overflow 64 bits within the limits are reported, not wrapped:
  // K*C*R*S = 2^16 * 2^20 * 2^16 * 2^16 = 2^68.
  m.input = {1 << 20, 1, 1};
  m.layers = {conv(1 << 16, 1 << 16, 1 << 16, 1, 1, Padding::same)};
  problems = resolve_problems(m);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path == "model.layers[0]");
  CHECK(problems[0].message.find("overflows") != std::string::npos);
}

TEST_CASE("parse_spec and resolve_model agree on the spec's model", "[spec]") {
  const ExperimentSpec s = parse_spec(ra::spec::test::small_doc(), ".");
  const ResolvedModel r = resolve_model(s.model);
  REQUIRE(r.layers.size() == s.model.layers.size());
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    CHECK(r.layers[i].spec.name == s.model.layers[i].name);
  }
  CHECK(r.output == Shape{4});
}

namespace {

// The message of the ValidationError `validate` throws, or "" when it throws none.
template <class Validate>
std::string refusal(const Validate& validate) {
  try {
    validate();
  } catch (const ra::ValidationError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("batchnorm and global_avgpool work per channel of a [C, H, W] input", "[spec]") {
  LayerSpec bn;
  bn.type = LayerType::batchnorm;
  LayerSpec gap;
  gap.type = LayerType::global_avgpool;
  ModelSpec m{{8, 5, 5}, {conv(16, 3, 3, 1, 1, Padding::same), bn, gap, dense(10)}};
  const ResolvedModel r = resolve_model(m);
  REQUIRE(r.layers[1].output == Shape{16, 5, 5});
  REQUIRE(r.layers[1].params == 32);             // gamma and beta per channel
  REQUIRE(r.layers[1].flops == 4 * 16 * 5 * 5);  // statistics and normalisation, 4 per element
  REQUIRE(r.layers[2].output == Shape{16});
  REQUIRE(r.layers[2].flops == 16 * 5 * 5);
  REQUIRE(r.layers[3].params == 16 * 10 + 10);
  // On the flat output of a dense layer: refused, naming the layer.
  ModelSpec flat{{8, 5, 5}, {LayerSpec{.type = LayerType::flatten}, dense(4), bn}};
  const std::string what = refusal([&] { resolve_model(flat); });
  INFO(what);
  REQUIRE(what.find("model.layers[2]") != std::string::npos);
  REQUIRE(what.find("batchnorm 'batchnorm_0'") != std::string::npos);
  REQUIRE(what.find("[4] (rank 1)") != std::string::npos);
  ModelSpec flat_pool{{8, 5, 5}, {LayerSpec{.type = LayerType::flatten}, gap}};
  REQUIRE_THROWS_AS(resolve_model(flat_pool), ra::ValidationError);
}

TEST_CASE("residual blocks: identity and projection shortcuts, names and shapes", "[spec]") {
  const auto spec = parse_spec(json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [4, 8, 8], "classes": 2}},
    "model": {"input": [4, 8, 8], "layers": [
      {"type": "residual", "name": "a", "layers": [
        {"type": "batchnorm"}, {"type": "relu"},
        {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"}]},
      {"type": "residual", "name": "b", "activation": "relu", "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "stride": 2, "padding": "same"}],
       "shortcut": {"filters": 8, "stride": 2}},
      {"type": "global_avgpool"}, {"type": "dense", "units": 2}]}})"),
                               ".");
  const ResolvedModel r = resolve_model(spec.model);
  const ResolvedLayer& a = r.layers[0];
  REQUIRE(a.output == Shape{4, 8, 8});
  REQUIRE(a.body.size() == 3);
  REQUIRE(a.body[0].spec.name == "a.batchnorm_0");
  REQUIRE(a.body[2].spec.name == "a.conv2d_0");
  REQUIRE(a.shortcut.empty());
  REQUIRE(a.params == 2 * 4 + 4 * 4 * 9 + 4);
  const ResolvedLayer& b = r.layers[1];
  REQUIRE(b.output == Shape{8, 4, 4});
  REQUIRE(b.shortcut.size() == 1);
  REQUIRE(b.shortcut[0].spec.name == "b.shortcut");
  REQUIRE(b.shortcut[0].output == Shape{8, 4, 4});
  REQUIRE(b.params == (8 * 4 * 9 + 8) + (8 * 4 + 8));
  // The add and the relu after it, one FLOP per element each, on top of the two convolutions.
  REQUIRE(b.flops == b.body[0].flops + b.shortcut[0].flops + 2 * 8 * 4 * 4);
}

TEST_CASE("a residual whose body and shortcut disagree is refused, naming it", "[spec]") {
  const auto parsed = json::parse(R"({
    "data": {"train": {"format": "random", "samples": 8, "shape": [4, 8, 8], "classes": 2}},
    "model": {"input": [4, 8, 8], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 1},
      {"type": "residual", "name": "stage2", "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "stride": 2, "padding": "same"}]},
      {"type": "flatten"}, {"type": "dense", "units": 2}]}})");
  const std::string mismatch = refusal([&] { parse_spec(parsed, "."); });
  INFO(mismatch);
  REQUIRE(mismatch.find("model.layers[1]") != std::string::npos);
  REQUIRE(mismatch.find("residual 'stage2': its body's output [8, 4, 4] differs from its "
                        "shortcut's [4, 8, 8]") != std::string::npos);
  REQUIRE(mismatch.find("\"shortcut\": {\"filters\": 8, \"stride\": 2}") != std::string::npos);
  // A body layer's own problem carries its path inside the block.
  auto bad_kernel = parsed;
  bad_kernel["model"]["layers"][1]["layers"][0]["kernel"] = 9;
  bad_kernel["model"]["layers"][1]["layers"][0]["padding"] = "valid";
  const std::string too_large = refusal([&] { parse_spec(bad_kernel, "."); });
  INFO(too_large);
  REQUIRE(too_large.find("model.layers[1].layers[0]") != std::string::npos);
  REQUIRE(too_large.find("larger than its 8x8 input") != std::string::npos);
}
