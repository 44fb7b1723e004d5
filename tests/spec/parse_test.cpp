// parse_spec on valid documents: every field read, every default filled, and the canonical JSON
// of to_json reading back to the same spec.
#include <catch2/catch.hpp>

#include "spec/parse.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::spec::test::json;
using ra::spec::test::require_same;
using ra::spec::test::small_doc;

namespace {

// The example of docs/spec.md: every key of the format is spelled out at least once.
json full_doc() {
  return json::parse(R"({
    "name": "keras-mnist", "seed": 42, "device": "cpu", "threads": 2,
    "data": {"train": {"format": "idx", "images": "fashion/train-images-idx3-ubyte.gz",
                       "labels": "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
                       "limit": 6000},
             "eval": {"format": "constant", "samples": 100, "shape": [1, 28, 28], "classes": 10,
                      "value": 0.5, "limit": 50},
             "scale": 0.00392156862745098, "batch_size": 128, "shuffle": false, "drop_last": true,
             "workers": 3},
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "conv2d", "filters": 32, "kernel": 3, "stride": 1, "padding": "valid",
       "activation": "relu", "use_bias": true, "kernel_initializer": "he_normal",
       "bias_initializer": "zeros", "name": "conv1"},
      {"type": "conv2d", "filters": 8, "kernel": [3, 5], "stride": [2, 1], "padding": "same",
       "use_bias": false},
      {"type": "maxpool2d", "pool": 2},
      {"type": "maxpool2d", "pool": [3, 2], "stride": [1, 2], "padding": "same"},
      {"type": "dropout", "rate": 0.25},
      {"type": "flatten"},
      {"type": "dense", "units": 10, "activation": "sigmoid", "kernel_initializer": "zeros",
       "bias_initializer": "glorot_uniform"},
      {"type": "activation", "activation": "tanh"},
      {"type": "relu"}]},
    "loss": "mean_squared_error",
    "optimizer": {"type": "rmsprop", "lr": 1e-4, "decay": 1e-6, "weight_decay": 0.01,
                  "rho": 0.8, "eps": 1e-8},
    "train": {"epochs": 3, "max_steps": 200},
    "determinism": {"mode": "nondeterministic",
                    "ops": {"conv2d.backward_filter": "deterministic", "loss": "nondeterministic"}}})");
}

}  // namespace

TEST_CASE("a full spec is read field by field", "[spec]") {
  const ExperimentSpec s = parse_spec(full_doc(), "/home/me/specs");
  CHECK(s.name == "keras-mnist");
  CHECK(s.seed == 42);
  CHECK(s.device == Device::cpu);
  CHECK(s.threads == 2);
  CHECK(s.base_dir == "/home/me/specs");

  CHECK(s.data.train.format == DataFormat::idx);
  // Relative paths are taken from base_dir; absolute ones are kept.
  CHECK(s.data.train.images == "/home/me/specs/fashion/train-images-idx3-ubyte.gz");
  CHECK(s.data.train.labels == "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz");
  CHECK(s.data.train.limit == 6000);
  REQUIRE(s.data.eval);
  CHECK(s.data.eval->format == DataFormat::constant);
  CHECK(s.data.eval->samples == 100);
  CHECK(s.data.eval->shape == ra::Shape{1, 28, 28});
  CHECK(s.data.eval->value == 0.5f);
  CHECK(s.data.eval->limit == 50);
  CHECK(s.data.scale == static_cast<float>(0.00392156862745098));
  CHECK(s.data.batch_size == 128);
  CHECK_FALSE(s.data.shuffle);
  CHECK(s.data.drop_last);
  CHECK(s.data.workers == 3);

  const auto& L = s.model.layers;
  REQUIRE(L.size() == 9);
  CHECK(L[0].name == "conv1");
  CHECK(L[0].kernel_initializer == Initializer::he_normal);
  CHECK(L[0].activation == Activation::relu);
  CHECK((L[1].kernel_h == 3 && L[1].kernel_w == 5 && L[1].stride_h == 2 && L[1].stride_w == 1));
  CHECK(L[1].padding == Padding::same);
  CHECK_FALSE(L[1].use_bias);
  CHECK(L[1].name == "conv2d_1");  // the second conv2d, counted from 0 whether named or not
  CHECK((L[2].pool_h == 2 && L[2].pool_w == 2 && L[2].stride_h == 2 && L[2].stride_w == 2));
  CHECK((L[3].pool_h == 3 && L[3].pool_w == 2 && L[3].stride_h == 1 && L[3].stride_w == 2));
  CHECK(L[4].rate == 0.25f);
  CHECK(L[5].type == LayerType::flatten);
  CHECK(L[6].units == 10);
  CHECK(L[6].bias_initializer == Initializer::glorot_uniform);
  CHECK((L[7].type == LayerType::activation && L[7].activation == Activation::tanh));
  CHECK((L[8].type == LayerType::activation && L[8].activation == Activation::relu));
  CHECK(L[7].name == "activation_0");
  CHECK(L[8].name == "activation_1");

  CHECK(s.loss == Loss::mean_squared_error);
  CHECK(s.optimizer.type == OptimizerType::rmsprop);
  CHECK(s.optimizer.lr == 1e-4);
  CHECK(s.optimizer.decay == 1e-6);
  CHECK(s.optimizer.weight_decay == 0.01);
  CHECK(s.optimizer.rho == 0.8);
  CHECK(s.optimizer.eps == 1e-8);
  CHECK(s.train.epochs == 3);
  CHECK(s.train.max_steps == 200);
  CHECK(s.determinism.mode == KernelMode::nondeterministic);
  CHECK(s.determinism.mode_for(ReducingOp::conv2d_backward_filter) == KernelMode::deterministic);
  CHECK(s.determinism.mode_for(ReducingOp::dense_backward_data) == KernelMode::nondeterministic);
  CHECK(s.determinism.ops.size() == 2);
}

TEST_CASE("a full spec round-trips through to_json and parse_spec", "[spec]") {
  for (json doc : {full_doc(), small_doc()}) {
    const ExperimentSpec s = parse_spec(doc, "/home/me/specs");
    const json canonical = to_json(s);
    const ExperimentSpec again = parse_spec(canonical, s.base_dir);
    require_same(s, again);
    CHECK(to_json(again).dump() == canonical.dump());
  }
}

TEST_CASE("to_json writes every key with its resolved value", "[spec]") {
  const json j = to_json(parse_spec(small_doc(), "."));
  CHECK(j["name"] == "");
  CHECK(j["seed"] == 0);
  CHECK(j["device"] == "auto");
  CHECK(j["threads"] == 0);
  CHECK(j["data"]["train"] == json::parse(R"({"format": "random", "samples": 64,
      "shape": [1, 8, 8], "classes": 4, "seed": 0, "limit": 0})"));
  CHECK_FALSE(j["data"].contains("eval"));
  CHECK(j["data"]["batch_size"] == 32);
  CHECK(j["model"]["layers"][0] == json::parse(R"({"type": "conv2d", "name": "conv2d_0",
      "filters": 2, "kernel": [3, 3], "stride": [1, 1], "padding": "valid", "activation": "relu",
      "use_bias": true, "kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"})"));
  CHECK(j["model"]["layers"][1] == json::parse(R"({"type": "flatten", "name": "flatten_0"})"));
  CHECK(j["optimizer"] == json::parse(R"({"type": "sgd", "lr": 0.01, "decay": 0.0,
      "weight_decay": 0.0, "momentum": 0.0, "dampening": 0.0, "nesterov": false})"));
  CHECK(j["train"] == json::parse(R"({"epochs": 1, "max_steps": 0})"));
  CHECK(j["determinism"] == json::parse(R"({"mode": "deterministic", "ops": {}})"));
  CHECK(j["loss"] == "softmax_cross_entropy");
}

TEST_CASE("float fields are written as their shortest decimal", "[spec]") {
  json doc = small_doc();
  doc["data"]["scale"] = 0.00392156862745098;  // 1/255, stored as a float
  doc["model"]["layers"].insert(doc["model"]["layers"].begin() + 1,
                                json{{"type", "dropout"}, {"rate", 0.1}});
  const json j = to_json(parse_spec(doc, "."));
  CHECK(j["data"]["scale"].dump() == "0.003921569");
  CHECK(j["model"]["layers"][1]["rate"].dump() == "0.1");
  // ... and they read back as the same floats.
  CHECK(static_cast<float>(j["data"]["scale"].get<double>()) ==
        static_cast<float>(0.00392156862745098));
}

TEST_CASE("equal specs spelled differently give equal canonical JSON", "[spec]") {
  json terse = small_doc();
  terse["model"]["layers"] = json::parse(R"([
      {"type": "conv2d", "filters": 2, "kernel": 3},
      {"type": "relu"},
      {"type": "maxpool2d", "pool": 2},
      {"type": "flatten"},
      {"type": "dense", "units": 4}])");
  json verbose = small_doc();
  verbose["model"]["layers"] = json::parse(R"([
      {"type": "conv2d", "filters": 2.0, "kernel": [3, 3], "stride": [1, 1], "padding": "valid",
       "activation": "none", "use_bias": true, "name": "conv2d_0"},
      {"type": "activation", "activation": "relu", "name": "activation_0"},
      {"type": "maxpool2d", "pool": [2, 2], "stride": 2},
      {"type": "flatten"},
      {"type": "dense", "units": 4, "kernel_initializer": "glorot_uniform"}])");
  verbose["optimizer"] = {{"type", "sgd"}, {"lr", 0.01}, {"momentum", 0}};
  verbose["determinism"] = {{"mode", "deterministic"}};
  verbose["data"]["shuffle"] = true;
  CHECK(to_json(parse_spec(terse, ".")).dump() == to_json(parse_spec(verbose, ".")).dump());
}

TEST_CASE("defaults are filled in", "[spec]") {
  const ExperimentSpec s = parse_spec(json::parse(R"({
    "data": {"train": {"format": "random", "samples": 10, "shape": [1, 4, 4]}},
    "model": {"input": [1, 4, 4], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 2}, {"type": "maxpool2d", "pool": [1, 3]},
      {"type": "flatten"}, {"type": "dense", "units": 10}]}})"),
                                      "");
  CHECK(s.name.empty());
  CHECK(s.seed == 0);
  CHECK(s.device == Device::auto_select);
  CHECK(s.threads == 0);
  CHECK(s.data.train.classes == 10);
  CHECK(s.data.train.seed == 0);
  CHECK(s.data.train.limit == 0);
  CHECK_FALSE(s.data.eval);
  CHECK(s.data.scale == 1.0f);
  CHECK(s.data.batch_size == 32);
  CHECK(s.data.shuffle);
  CHECK_FALSE(s.data.drop_last);
  CHECK(s.data.workers == 0);
  const LayerSpec& conv = s.model.layers[0];
  CHECK(conv.name == "conv2d_0");
  CHECK((conv.stride_h == 1 && conv.stride_w == 1));
  CHECK(conv.padding == Padding::valid);
  CHECK(conv.use_bias);
  CHECK(conv.activation == Activation::none);
  CHECK(conv.kernel_initializer == Initializer::glorot_uniform);
  CHECK(conv.bias_initializer == Initializer::zeros);
  const LayerSpec& pool = s.model.layers[1];
  CHECK(pool.name == "maxpool2d_0");
  CHECK((pool.stride_h == 1 && pool.stride_w == 3));  // stride defaults to the pool size
  CHECK(pool.padding == Padding::valid);
  CHECK(s.model.layers[2].name == "flatten_0");
  CHECK(s.model.layers[3].name == "dense_0");
  CHECK(s.loss == Loss::softmax_cross_entropy);
  CHECK(s.optimizer.type == OptimizerType::sgd);
  CHECK(s.optimizer.lr == 0.01);
  CHECK(s.optimizer.momentum == 0.0);
  CHECK(s.optimizer.dampening == 0.0);
  CHECK_FALSE(s.optimizer.nesterov);
  CHECK(s.optimizer.decay == 0.0);
  CHECK(s.optimizer.weight_decay == 0.0);
  CHECK(s.train.epochs == 1);
  CHECK(s.train.max_steps == 0);
  CHECK(s.determinism.mode == KernelMode::deterministic);
  CHECK(s.determinism.ops.empty());
}

TEST_CASE("optimizer defaults follow Keras 2.x per type", "[spec]") {
  auto with_optimizer = [](const char* type) {
    json doc = small_doc();
    doc["optimizer"] = {{"type", type}};
    return parse_spec(doc, ".").optimizer;
  };
  const OptimizerSpec sgd = with_optimizer("sgd");
  CHECK(sgd.lr == 0.01);
  const OptimizerSpec adam = with_optimizer("adam");
  CHECK((adam.lr == 0.001 && adam.beta1 == 0.9 && adam.beta2 == 0.999 && adam.eps == 1e-7));
  const OptimizerSpec rmsprop = with_optimizer("rmsprop");
  CHECK((rmsprop.lr == 0.001 && rmsprop.rho == 0.9 && rmsprop.eps == 1e-7));
  const OptimizerSpec adadelta = with_optimizer("adadelta");
  CHECK((adadelta.lr == 1.0 && adadelta.rho == 0.95 && adadelta.eps == 1e-7));
  CHECK(adadelta.type == OptimizerType::adadelta);
}

TEST_CASE("integers may be written as whole floats, and seeds use all 64 bits", "[spec]") {
  json doc = small_doc();
  doc["seed"] = 18446744073709551615ull;
  doc["data"]["batch_size"] = 16.0;
  doc["train"] = {{"epochs", 1e2}};
  const ExperimentSpec s = parse_spec(doc, ".");
  CHECK(s.seed == 18446744073709551615ull);
  CHECK(s.data.batch_size == 16);
  CHECK(s.train.epochs == 100);
}

TEST_CASE("sgd with nesterov momentum", "[spec]") {
  json doc = small_doc();
  doc["optimizer"] = {{"type", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}};
  const OptimizerSpec o = parse_spec(doc, ".").optimizer;
  CHECK((o.momentum == 0.9 && o.nesterov && o.dampening == 0.0 && o.lr == 0.1));
}
