// Real data: training on a Fashion-MNIST subset lowers the loss and beats chance by far.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "spec/parse.h"
#include "train/trainer.h"

TEST_CASE("training on a Fashion-MNIST subset decreases the loss", "[train][data]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    FAIL("Fashion-MNIST is not installed: run scripts/setup (package dataset-fashion-mnist)");
  }
  auto doc = nlohmann::json::parse(R"({
    "seed": 1,
    "data": {"scale": 0.00392156862745098, "batch_size": 64},
    "model": {"input": [1, 28, 28], "layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2},
      {"type": "flatten"},
      {"type": "dense", "units": 10}]},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "train": {"epochs": 3}})");
  doc["data"]["train"] = {{"format", "idx"},
                          {"images", dir + "train-images-idx3-ubyte.gz"},
                          {"labels", dir + "train-labels-idx1-ubyte.gz"},
                          {"limit", 2048}};
  doc["data"]["eval"] = {{"format", "idx"},
                         {"images", dir + "t10k-images-idx3-ubyte.gz"},
                         {"labels", dir + "t10k-labels-idx1-ubyte.gz"},
                         {"limit", 1000}};
  const auto spec = ra::spec::parse_spec(doc, ".");
  ra::train::RunOptions options;
  options.threads = 2;
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options);
  const auto result = trainer.run();
  REQUIRE(result.epochs.size() == 3);
  REQUIRE(result.epochs[1].mean_train_loss < result.epochs[0].mean_train_loss);
  REQUIRE(result.epochs[2].mean_train_loss < result.epochs[1].mean_train_loss);
  REQUIRE(*result.epochs[2].eval_loss < *result.epochs[0].eval_loss);
  // Ten classes: chance is 10%; a linear model on this subset reaches ~75%.
  REQUIRE(*result.epochs[2].eval_accuracy > 0.65);
}
