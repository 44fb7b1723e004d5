// The data formats read from files besides IDX: CIFAR-10's binary batches (cifar10) and NumPy
// arrays (npy). Their keys, paths resolved against the spec's folder, the canonical form, and
// what validation knows without opening them: CIFAR-10's [3, 32, 32] samples of 10 classes.
#include <catch2/catch.hpp>

#include "spec/parse.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::spec::test::json;
using ra::spec::test::only_problem;
using ra::spec::test::problems_of;

namespace {

// A valid spec of `train` on [3, 32, 32] inputs with 10 outputs.
json cifar_doc(const json& train) {
  json doc = json::parse(R"({
    "data": {"batch_size": 8},
    "model": {"input": [3, 32, 32], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "stride": 2},
      {"type": "global_avgpool"},
      {"type": "dense", "units": 10}]}})");
  doc["data"]["train"] = train;
  return doc;
}

}  // namespace

TEST_CASE("cifar10 and npy sets: keys, paths, canonical form", "[spec][data]") {
  const json cifar = {{"format", "cifar10"},
                      {"files", {"cifar-10-batches-bin/data_batch_1.bin", "/data/b2.bin"}},
                      {"limit", 5000}};
  const ExperimentSpec c = parse_spec(cifar_doc(cifar), "/specs");
  CHECK(c.data.train.format == DataFormat::cifar10);
  CHECK(c.data.train.files ==
        std::vector<std::string>{"/specs/cifar-10-batches-bin/data_batch_1.bin", "/data/b2.bin"});
  CHECK(c.data.train.shape == ra::Shape{3, 32, 32});
  CHECK(c.data.train.classes == 10);
  const json c_json = to_json(c)["data"]["train"];
  CHECK(c_json == json{{"format", "cifar10"},
                       {"files", c.data.train.files},
                       {"limit", 5000}});  // the format's keys only
  ra::spec::test::require_same(c, parse_spec(to_json(c), c.base_dir));

  const json npy = {{"format", "npy"}, {"images", "x.npy"}, {"labels", "../y.npy"}};
  const ExperimentSpec n = parse_spec(cifar_doc(npy), "/specs/a");
  CHECK(n.data.train.images == "/specs/a/x.npy");
  CHECK(n.data.train.labels == "/specs/y.npy");
  CHECK(n.data.train.layout == ImageLayout::nchw);  // the default
  CHECK(to_json(n)["data"]["train"] == json{{"format", "npy"},
                                            {"images", "/specs/a/x.npy"},
                                            {"labels", "/specs/y.npy"},
                                            {"layout", "nchw"},
                                            {"limit", 0}});
  json nhwc = npy;
  nhwc["layout"] = "nhwc";
  const ExperimentSpec k = parse_spec(cifar_doc(nhwc), "/specs");
  CHECK(k.data.train.layout == ImageLayout::nhwc);
  ra::spec::test::require_same(k, parse_spec(to_json(k), k.base_dir));
}

TEST_CASE("cifar10 and npy sets: problems at their paths", "[spec][data]") {
  CHECK(only_problem(cifar_doc({{"format", "cifar10"}}), "data.train.files") ==
        "missing required key 'files' (expected an array of file paths)");
  CHECK(only_problem(cifar_doc({{"format", "cifar10"}, {"files", json::array()}}),
                     "data.train.files") == "expected an array of 1 to 256 file paths, got []");
  CHECK(only_problem(cifar_doc({{"format", "cifar10"}, {"files", "b.bin"}}), "data.train.files")
            .starts_with("expected an array of 1 to 256 file paths"));
  CHECK(only_problem(cifar_doc({{"format", "cifar10"}, {"files", {"a.bin", ""}}}),
                     "data.train.files[1]") == "expected a file path, got \"\"");
  CHECK(only_problem(cifar_doc({{"format", "cifar10"}, {"files", {"a.bin"}}, {"images", "x"}}),
                     "data.train.images")
            .starts_with("unknown key 'images'"));
  CHECK(only_problem(cifar_doc({{"format", "npy"}, {"images", "x.npy"}}), "data.train.labels") ==
        "missing required key 'labels' (expected a file path)");
  CHECK(only_problem(
            cifar_doc(
                {{"format", "npy"}, {"images", "x.npy"}, {"labels", "y.npy"}, {"layout", "chw"}}),
            "data.train.layout")
            .starts_with("expected one of \"nchw\", \"nhwc\""));
  CHECK(only_problem(cifar_doc({{"format", "cifar"}}), "data.train.format").find("\"cifar10\"") !=
        std::string::npos);
}

TEST_CASE("cifar10 sets are checked against the model without opening them", "[spec][data]") {
  const json cifar = {{"format", "cifar10"}, {"files", {"data_batch_1.bin"}}};
  json doc = cifar_doc(cifar);
  doc["model"]["input"] = {1, 32, 32};
  CHECK(only_problem(doc, "data.train") ==
        "CIFAR-10 samples are [3, 32, 32] and do not fit model.input [1, 32, 32]");
  doc = cifar_doc(cifar);
  doc["model"]["layers"][2]["units"] = 4;
  CHECK(only_problem(doc, "model.layers[2]").find("data.train has 10 classes") !=
        std::string::npos);
  // An evaluation set of CIFAR-10 beside a training set of 4 classes.
  doc = cifar_doc({{"format", "random"}, {"samples", 8}, {"shape", {3, 32, 32}}, {"classes", 4}});
  doc["model"]["layers"][2]["units"] = 4;
  doc["data"]["eval"] = cifar;
  CHECK(only_problem(doc, "data.eval") == "CIFAR-10 has 10 classes but the model's output is [4]");
  // npy files: shape and classes are known when they are read, not here.
  doc = cifar_doc({{"format", "npy"}, {"images", "x.npy"}, {"labels", "y.npy"}});
  doc["model"]["input"] = {1, 28, 28};
  CHECK_NOTHROW(parse_spec(doc, "/specs"));
}
