// Limits of a spec (docs/spec.md, "Limits"): counts beyond what the code can hold and models or
// data sets beyond the planned-memory cap are refused at validation, with the JSON path, before
// anything is allocated; the spec name is one safe file-name component.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "spec/experiment_name.h"
#include "spec/limits.h"
#include "spec/memory_plan.h"
#include "spec/parse.h"
#include "spec/resolve.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::spec::test::json;
using ra::spec::test::only_problem;
using ra::spec::test::problems_of;
using ra::spec::test::small_doc;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("counts beyond their limits name the path and the range", "[spec][limits]") {
  json doc = small_doc();
  doc["data"]["train"]["samples"] = std::int64_t{1} << 62;  // once a signed overflow in the loader
  CHECK(only_problem(doc, "data.train.samples") ==
        "expected a positive integer <= 2147483647, got 4611686018427387904");

  doc = small_doc();
  doc["data"]["train"]["classes"] = (std::int64_t{1} << 24) + 1;
  CHECK(contains(only_problem(doc, "data.train.classes"), "2..16777216"));

  doc = small_doc();
  doc["data"]["train"]["shape"][1] = 2000000;
  const auto problems = problems_of(doc);
  REQUIRE_FALSE(problems.empty());
  CHECK(problems[0].path == "data.train.shape[1]");
  CHECK(contains(problems[0].message, "1..1048576"));

  doc = small_doc();
  doc["model"]["input"] = {1, 1048576, 1048576};  // each dimension allowed, the product is not
  doc["data"]["train"]["shape"] = {1, 1048576, 1048576};
  CHECK(contains(only_problem(doc, "model.input"), "at most 2^31 - 1 elements"));

  doc = small_doc();
  doc["model"]["layers"][0]["kernel"] = json::array({3, 70000});
  CHECK(only_problem(doc, "model.layers[0].kernel[1]") ==
        "expected an integer in 1..65536, got 70000");

  doc = small_doc();
  doc["model"]["layers"][2]["units"] = std::int64_t{1} << 31;
  CHECK(only_problem(doc, "model.layers[2].units") ==
        "expected an integer in 1..16777216, got 2147483648");

  doc = small_doc();
  doc["train"] = {{"max_steps", std::int64_t{1} << 53}};
  CHECK(contains(only_problem(doc, "train.max_steps"), "<= 9007199254740991"));

  doc = small_doc();
  doc["model"]["layers"] = json::array();
  for (int i = 0; i < 1025; ++i) doc["model"]["layers"].push_back({{"type", "relu"}});
  CHECK(only_problem(doc, "model.layers") == "expected at most 1024 layers, got 1025");
}

TEST_CASE("a model whose memory is beyond the cap is refused at its largest layer",
          "[spec][limits]") {
  // A dense layer of 2^24 units over 4096 features: 2^36 weights, 256 GiB of them alone.
  // It used to pass validation and fail with "out of memory" once allocated.
  json doc = small_doc();
  doc["model"]["input"] = {1, 64, 64};
  doc["data"]["train"]["shape"] = {1, 64, 64};
  doc["data"]["train"]["classes"] = 16777216;
  doc["model"]["layers"] =
      json::array({json{{"type", "flatten"}}, json{{"type", "dense"}, {"units", 16777216}}});
  const std::string message = only_problem(doc, "model.layers[1]");
  CHECK(contains(message, "more than the 64.0 GiB a spec may plan"));
  CHECK(contains(message, "parameters 256.1 GiB"));  // and 64 MiB of biases
  CHECK(contains(message, "use fewer filters or units"));
}

TEST_CASE("a batch whose activations are beyond the cap names data.batch_size", "[spec][limits]") {
  // 65536 samples of [64, 256, 256] per batch: 16 GiB for the input batch alone.
  json doc = small_doc();
  doc["model"]["input"] = {64, 256, 256};
  doc["data"]["train"]["shape"] = {64, 256, 256};
  doc["data"]["train"]["samples"] = 1;
  doc["data"]["batch_size"] = 65536;
  doc["model"]["layers"] =
      json::array({json{{"type", "maxpool2d"}, {"pool", 256}}, json{{"type", "flatten"}},
                   json{{"type", "dense"}, {"units", 4}}});
  CHECK(contains(only_problem(doc, "data.batch_size"), "use a smaller batch_size"));
}

TEST_CASE("a synthetic data set beyond the cap names its sample count", "[spec][limits]") {
  json doc = small_doc();
  doc["model"]["input"] = {3, 256, 256};
  doc["data"]["train"]["shape"] = {3, 256, 256};
  doc["data"]["train"]["samples"] = 200000;  // 200000 * 786 KiB = 146 GiB of float32
  doc["model"]["layers"] =
      json::array({json{{"type", "maxpool2d"}, {"pool", 256}}, json{{"type", "flatten"}},
                   json{{"type", "dense"}, {"units", 4}}});
  CHECK(contains(only_problem(doc, "data.train.samples"), "use fewer samples"));
  doc["data"]["train"]["limit"] = 1000;  // only the first 1000 are used
  CHECK_NOTHROW(parse_spec(doc, "."));
}

TEST_CASE("memory plans saturate instead of wrapping", "[spec][limits]") {
  CHECK(saturating_mul(std::uint64_t{1} << 40, std::uint64_t{1} << 40) == UINT64_MAX);
  CHECK(saturating_add(UINT64_MAX - 1, 5) == UINT64_MAX);
  CHECK(format_bytes(UINT64_MAX) == "more than 16 EiB");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(12) == "12 B");

  // The small spec: 2*1*3*3 + 2 + 4*72 + 4 = 312 parameters.
  const ExperimentSpec s = parse_spec(small_doc(), ".");
  const MemoryPlan plan = plan_memory(s, resolve_model(s.model), 64, 0);
  CHECK(plan.parameters == 312 * 4);
  CHECK(plan.gradients == 312 * 4);
  CHECK(plan.optimizer_state == 0);  // sgd without momentum
  CHECK(plan.steps == 2);            // 64 samples in batches of 32, 1 epoch
  CHECK(plan.total() < (std::uint64_t{1} << 20));
}

TEST_CASE("a ModelSpec built in code is held to the same count limits", "[spec][limits]") {
  ModelSpec m;
  m.input = {1, 8, 8};
  LayerSpec conv;
  conv.type = LayerType::conv2d;
  conv.filters = 1 << 20;
  conv.kernel_h = conv.kernel_w = 3;
  m.layers = {conv};
  try {
    resolve_model(m);
    FAIL("accepted");
  } catch (const ra::ValidationError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].path == "model.layers[0].filters");
    CHECK(e.problems()[0].message == "expected an integer in 1..65536, got 1048576");
  }
  // A shape whose product would overflow 64 bits is refused dimension by dimension.
  m.layers[0].filters = 1;
  m.input = {std::int64_t{1} << 31, std::int64_t{1} << 31, std::int64_t{1} << 31};
  CHECK_THROWS_AS(resolve_model(m), ra::ValidationError);
}

TEST_CASE("the spec name is one safe file-name component", "[spec][name]") {
  for (const char* good : {"quick", "keras-mnist_v2.1", "exp 7", "résumé", "実験"}) {
    INFO(good);
    CHECK_FALSE(name_problem(good));
    json doc = small_doc();
    doc["name"] = good;
    CHECK(parse_spec(doc, ".").name == good);
  }
  const std::string bad[] = {"../../x",
                             "/etc",
                             "a/b",
                             "a\\b",
                             ".",
                             "..",
                             std::string("a\0b", 3),
                             "line\nbreak",
                             "\x1b[2Kfake",
                             "bidi\xe2\x80\xaeoverride",
                             "bad\xff utf8",
                             " padded",
                             std::string(129, 'x')};
  for (const std::string& name : bad) {
    INFO(json(name).dump(-1, ' ', true, json::error_handler_t::replace));
    CHECK(name_problem(name));
    json doc = small_doc();
    doc["name"] = name;
    const std::string message = only_problem(doc, "name");
    CHECK(contains(message, "one file-name component"));
    CHECK(message.find('\n') == std::string::npos);  // the name is escaped in the message
    CHECK(message.find('\x1b') == std::string::npos);
  }
}

TEST_CASE("load_spec demands a name: its own or a usable file stem", "[spec][name]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ra-name-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto write = [&](const std::string& file, const json& doc) {
    std::ofstream(dir / file) << doc.dump();
    return (dir / file).string();
  };
  json doc = small_doc();
  doc["name"] = "";
  try {
    load_spec(write("empty.json", doc));
    FAIL("accepted an empty name");
  } catch (const ra::ValidationError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].path == "name");
  }
  // No "name": the stem, here with a newline in it, must be a valid name too.
  try {
    load_spec(write("bad\nstem.json", small_doc()));
    FAIL("accepted a file stem with a newline as the name");
  } catch (const ra::ValidationError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].path == "name");
    CHECK(contains(e.problems()[0].message, "bad\\nstem"));
    CHECK(contains(e.problems()[0].message, "add a \"name\""));
  }
  CHECK(load_spec(write("fine.json", small_doc())).name == "fine");
  fs::remove_all(dir);
}

TEST_CASE("a refused layer name is echoed escaped and cut short", "[spec][name]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["name"] = "a\x1b[2K" + std::string(100000, 'x');
  const std::string message = only_problem(doc, "model.layers[0].name");
  CHECK(contains(message, "got \"a\\x1b[2Kxxx"));
  CHECK(contains(message, "... (100005 bytes)"));
  CHECK(message.size() < 200);
}
