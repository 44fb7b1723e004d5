// parse_spec on invalid documents: each class of error gives a problem at the exact JSON path
// with what was expected, and every problem of a document is reported at once.
#include <catch2/catch.hpp>

#include "spec/parse.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::spec::test::json;
using ra::spec::test::only_problem;
using ra::spec::test::paths_of;
using ra::spec::test::problems_of;
using ra::spec::test::small_doc;

TEST_CASE("unknown keys are reported with the closest known key", "[spec]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["filter"] = 3;
  CHECK(only_problem(doc, "model.layers[0].filter") ==
        "unknown key 'filter' (did you mean 'filters'?)");

  doc = small_doc();
  doc["seeds"] = 3;
  CHECK(only_problem(doc, "seeds") == "unknown key 'seeds' (did you mean 'seed'?)");

  doc = small_doc();
  doc["data"]["BatchSize"] = 3;  // case and a missing underscore: still a likely typo
  CHECK(only_problem(doc, "data.BatchSize") ==
        "unknown key 'BatchSize' (did you mean 'batch_size'?)");

  doc = small_doc();
  doc["colour"] = "blue";  // nothing close: the allowed keys are listed
  const std::string message = only_problem(doc, "colour");
  CHECK(message.find("unknown key 'colour'") == 0);
  CHECK(message.find("name, seed, device, threads, data, model") != std::string::npos);

  // A key of another layer type is unknown here.
  doc = small_doc();
  doc["model"]["layers"][2]["kernel"] = 3;
  CHECK(only_problem(doc, "model.layers[2].kernel").find("unknown key 'kernel'") == 0);

  // ... and so is a key of another optimizer type.
  doc = small_doc();
  doc["optimizer"] = {{"type", "adam"}, {"momentum", 0.9}};
  CHECK(only_problem(doc, "optimizer.momentum").find("unknown key 'momentum'") == 0);

  // Keys per data format: "seed" belongs to random sets, not to idx files.
  doc = small_doc();
  doc["data"]["train"] = {{"format", "idx"}, {"images", "a"}, {"labels", "b"}, {"seed", 1}};
  CHECK(only_problem(doc, "data.train.seed").find("unknown key 'seed'") == 0);

  // Reducing op names are keys too; a name with dots is quoted in the path.
  doc = small_doc();
  doc["determinism"] = {{"ops", {{"conv2d.backward_filtr", "deterministic"}}}};
  CHECK(only_problem(doc, "determinism.ops[\"conv2d.backward_filtr\"]") ==
        "unknown key 'conv2d.backward_filtr' (did you mean 'conv2d.backward_filter'?)");
}

TEST_CASE("wrong types name the path and the expectation", "[spec]") {
  json doc = small_doc();
  doc["data"]["batch_size"] = "sixteen";
  CHECK(only_problem(doc, "data.batch_size") == "expected an integer in 1..65536, got \"sixteen\"");

  doc = small_doc();
  doc["model"]["layers"][0]["filters"] = 1.5;
  CHECK(only_problem(doc, "model.layers[0].filters") == "expected an integer in 1..65536, got 1.5");

  doc = small_doc();
  doc["threads"] = true;  // booleans are not numbers
  CHECK(only_problem(doc, "threads") == "expected an integer in 0..1024, got true");

  doc = small_doc();
  doc["data"]["shuffle"] = 1;  // ... nor numbers booleans
  CHECK(only_problem(doc, "data.shuffle") == "expected true or false, got 1");

  doc = small_doc();
  doc["optimizer"] = {{"type", "sgd"}, {"lr", "0.1"}};
  CHECK(only_problem(doc, "optimizer.lr") == "expected a number > 0, got \"0.1\"");

  doc = small_doc();
  doc["model"]["layers"][0]["kernel"] = json::array({3, "3"});
  CHECK(only_problem(doc, "model.layers[0].kernel[1]") ==
        "expected an integer in 1..65536, got \"3\"");

  doc = small_doc();
  doc["model"]["layers"][0]["kernel"] = json::array({3, 3, 3});
  CHECK(only_problem(doc, "model.layers[0].kernel") ==
        "expected a positive integer or [height, width], got [3,3,3]");

  doc = small_doc();
  doc["data"]["train"] = "train.gz";
  CHECK(only_problem(doc, "data.train") == "expected an object, got \"train.gz\"");

  doc = small_doc();
  doc["model"]["layers"][1]["name"] = 7;
  CHECK(only_problem(doc, "model.layers[1].name") == "expected a string, got 7");

  doc = small_doc();
  doc["seed"] = -1;
  CHECK(only_problem(doc, "seed") == "expected a non-negative integer, got -1");

  const auto problems = problems_of(json::array({1, 2}));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].path.empty());  // the document itself
  CHECK(problems[0].message == "expected an object, got [1,2]");
}

TEST_CASE("out-of-range values name the path and the range", "[spec]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["filters"] = -3;
  CHECK(only_problem(doc, "model.layers[0].filters") == "expected an integer in 1..65536, got -3");

  doc = small_doc();
  doc["optimizer"] = {{"type", "sgd"}, {"lr", -1}};
  CHECK(only_problem(doc, "optimizer.lr") == "expected a number > 0, got -1");

  doc = small_doc();
  doc["threads"] = 1025;
  CHECK(only_problem(doc, "threads") == "expected an integer in 0..1024, got 1025");

  doc = small_doc();
  doc["data"]["workers"] = 65;
  CHECK(only_problem(doc, "data.workers") == "expected an integer in 0..64, got 65");

  doc = small_doc();
  doc["train"] = {{"epochs", 0}};
  CHECK(only_problem(doc, "train.epochs") == "expected an integer in 1..100000, got 0");

  doc = small_doc();
  doc["model"]["layers"].insert(doc["model"]["layers"].begin() + 1,
                                json{{"type", "dropout"}, {"rate", 1.0}});
  CHECK(only_problem(doc, "model.layers[1].rate") == "expected a number in [0, 1), got 1.0");

  // 0.99999999 is below 1 as a double but rounds to 1.0f, the type the rate is stored in.
  doc["model"]["layers"][1]["rate"] = 0.99999999;
  CHECK(only_problem(doc, "model.layers[1].rate").find("rounds to 1 as a float") !=
        std::string::npos);

  doc = small_doc();
  doc["data"]["train"]["classes"] = 1;
  CHECK(only_problem(doc, "data.train.classes") == "expected an integer in 2..16777216, got 1");

  doc = small_doc();
  doc["data"]["scale"] = 0;
  CHECK(only_problem(doc, "data.scale") == "expected a number > 0, got 0");

  doc = small_doc();
  doc["optimizer"] = {{"type", "adam"}, {"beta2", 1}};
  CHECK(only_problem(doc, "optimizer.beta2") == "expected a number in [0, 1), got 1");

  doc = small_doc();
  doc["data"]["train"]["limit"] = 65;  // the set has 64 samples
  CHECK(only_problem(doc, "data.train.limit") ==
        "expected at most the 64 samples of the set (0 = all), got 65");

  doc = small_doc();
  doc["optimizer"] = {{"type", "sgd"}, {"nesterov", true}};  // PyTorch: needs momentum
  CHECK(only_problem(doc, "optimizer.nesterov") ==
        "nesterov needs momentum > 0 and dampening 0, got momentum 0.0 and dampening 0.0");
  doc["optimizer"] = {{"type", "sgd"}, {"nesterov", true}, {"momentum", 0.9}, {"dampening", 0.1}};
  CHECK(only_problem(doc, "optimizer.nesterov").find("dampening 0.1") != std::string::npos);
}

TEST_CASE("missing required keys", "[spec]") {
  json doc = small_doc();
  doc["data"].erase("train");
  CHECK(only_problem(doc, "data.train") ==
        "missing required key 'train' (expected a data set object)");

  doc = small_doc();
  doc.erase("model");
  CHECK(only_problem(doc, "model").find("missing required key 'model'") == 0);

  doc = small_doc();
  doc["model"]["layers"][0].erase("filters");
  CHECK(only_problem(doc, "model.layers[0].filters") ==
        "missing required key 'filters' (expected a positive integer)");

  doc = small_doc();
  doc["model"]["layers"][0].erase("kernel");
  CHECK(only_problem(doc, "model.layers[0].kernel") ==
        "missing required key 'kernel' (expected a positive integer or [height, width])");

  doc = small_doc();
  doc["model"]["layers"] = json::array();
  CHECK(only_problem(doc, "model.layers") == "expected a non-empty array of layers, got []");

  doc = small_doc();
  doc["optimizer"] = {{"lr", 0.1}};
  CHECK(only_problem(doc, "optimizer.type").find("missing required key 'type'") == 0);

  doc = small_doc();
  doc["data"]["train"] = {{"format", "idx"}, {"images", "x.gz"}};
  CHECK(only_problem(doc, "data.train.labels") ==
        "missing required key 'labels' (expected a file path)");

  doc = small_doc();
  doc["data"]["train"].erase("shape");
  // Without a shape the input cannot be compared; nothing else is reported.
  CHECK(only_problem(doc, "data.train.shape").find("missing required key 'shape'") == 0);
}

TEST_CASE("bad enumeration values list the choices", "[spec]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["padding"] = "vaild";
  CHECK(only_problem(doc, "model.layers[0].padding") ==
        "expected one of \"valid\", \"same\", got \"vaild\" (did you mean \"valid\"?)");

  doc = small_doc();
  doc["device"] = "metal";
  CHECK(only_problem(doc, "device") ==
        "expected one of \"auto\", \"cpu\", \"cuda\", got \"metal\"");

  doc = small_doc();
  doc["model"]["layers"][1]["type"] = "flaten";
  CHECK(only_problem(doc, "model.layers[1].type").find("(did you mean \"flatten\"?)") !=
        std::string::npos);

  doc = small_doc();
  doc["determinism"] = {{"ops", {{"loss", "fast"}}}};
  CHECK(only_problem(doc, "determinism.ops.loss") ==
        "expected one of \"deterministic\", \"nondeterministic\", \"autotune\", "
        "\"batch_invariant\", got \"fast\"");

  doc = small_doc();
  doc["loss"] = "cross_entropy";
  CHECK(only_problem(doc, "loss").find("\"softmax_cross_entropy\", \"mean_squared_error\"") !=
        std::string::npos);

  doc = small_doc();
  doc["data"]["train"]["format"] = "mnist";
  CHECK(only_problem(doc, "data.train.format") ==
        "expected one of \"idx\", \"cifar10\", \"npy\", \"random\", \"constant\", got "
        "\"mnist\"");
}

TEST_CASE("impossible shapes are reported at their layer", "[spec]") {
  SECTION("kernel 5 on a 3x3 input") {
    json doc = small_doc();
    doc["model"]["input"] = {1, 3, 3};
    doc["data"]["train"]["shape"] = {1, 3, 3};
    doc["model"]["layers"][0]["kernel"] = 5;
    CHECK(only_problem(doc, "model.layers[0]") ==
          "kernel 5x5 is larger than its 3x3 input (padding \"valid\"); use a smaller kernel or "
          "padding \"same\"");
    // With "same" padding the input is padded to fit the kernel.
    doc["model"]["layers"][0]["padding"] = "same";
    CHECK_NOTHROW(parse_spec(doc, "."));
  }
  SECTION("dense after conv without flatten") {
    json doc = small_doc();
    doc["model"]["layers"].erase(1);
    CHECK(only_problem(doc, "model.layers[1]") ==
          "dense needs a flat [features] input, got [2, 6, 6]; add a flatten layer before it");
  }
  SECTION("conv on a flat input") {
    json doc = small_doc();
    doc["model"]["layers"].insert(doc["model"]["layers"].begin() + 2,
                                  json{{"type", "conv2d"}, {"filters", 1}, {"kernel", 1}});
    CHECK(only_problem(doc, "model.layers[2]") ==
          "conv2d needs a [C, H, W] input, got the flat [72]; it cannot follow flatten or dense "
          "layers");
  }
  SECTION("pool larger than its input") {
    json doc = small_doc();
    doc["model"]["layers"].insert(doc["model"]["layers"].begin() + 1,
                                  json{{"type", "maxpool2d"}, {"pool", {2, 7}}});
    CHECK(only_problem(doc, "model.layers[1]").find("pool 2x7 is larger than its 6x6 input") == 0);
  }
  SECTION("output units different from the classes") {
    json doc = small_doc();
    doc["model"]["layers"][2]["units"] = 10;
    CHECK(only_problem(doc, "model.layers[2]") ==
          "the model's output is [10] but data.train has 4 classes; the last layer must produce "
          "[4]");
  }
  SECTION("an eval set with other classes than the model") {
    json doc = small_doc();
    doc["data"]["eval"] = doc["data"]["train"];
    doc["data"]["eval"]["classes"] = 5;
    CHECK(only_problem(doc, "data.eval.classes") == "expected the model's 4 classes, got 5");
  }
  SECTION("a model that does not end flat") {
    json doc = small_doc();
    doc["model"]["layers"] = json::array({json{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}}});
    CHECK(only_problem(doc, "model.layers[0]") ==
          "the model must end with a flat [classes] output, got [4, 6, 6]; add flatten and dense "
          "layers");
  }
  SECTION("synthetic data that does not fit the model input") {
    json doc = small_doc();
    doc["data"]["train"]["shape"] = {1, 8, 9};
    CHECK(only_problem(doc, "data.train.shape") ==
          "samples of shape [1, 8, 9] do not fit model.input [1, 8, 8]");
  }
}

TEST_CASE("layer names are unique identifiers", "[spec]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["name"] = "features";
  doc["model"]["layers"][2]["name"] = "features";
  CHECK(only_problem(doc, "model.layers[2].name") ==
        "duplicate layer name 'features' (already the name of model.layers[0])");

  // A default name counts as taken.
  doc = small_doc();
  doc["model"]["layers"][2]["name"] = "conv2d_0";
  CHECK(only_problem(doc, "model.layers[2].name").find("duplicate layer name 'conv2d_0'") == 0);

  doc = small_doc();
  doc["model"]["layers"][0]["name"] = "conv-1";
  CHECK(only_problem(doc, "model.layers[0].name") ==
        "expected letters, digits and underscores ([A-Za-z0-9_]+), got \"conv-1\"");
}

TEST_CASE("all problems of a document are reported at once", "[spec]") {
  json doc = small_doc();
  doc["seeds"] = 1;                                  // unknown key
  doc["device"] = 3;                                 // wrong type
  doc["data"]["batch_size"] = 0;                     // out of range
  doc["data"]["train"]["classes"] = "four";          // wrong type, inside a data set
  doc["model"]["layers"][0]["kernel"] = 9;           // impossible shape (8x8 input)...
  doc["model"]["layers"][0]["filter"] = 2;           // ...still found beside an unknown key
  doc["optimizer"] = {{"type", "sgd"}, {"lr", -1}};  // out of range
  doc["train"] = {{"epochs", 1.5}};                  // float for an integer
  doc["determinism"] = {{"mode", "sometimes"}};      // bad enum
  const auto paths = paths_of(problems_of(doc));
  const std::vector<std::string> expected{"seeds",
                                          "device",
                                          "data.train.classes",
                                          "data.batch_size",
                                          "model.layers[0].filter",
                                          "model.layers[0]",
                                          "optimizer.lr",
                                          "train.epochs",
                                          "determinism.mode"};
  CHECK(paths == expected);
}

TEST_CASE("a broken layer does not hide the problems of the others", "[spec]") {
  json doc = small_doc();
  doc["model"]["layers"][0]["filters"] = 0;
  doc["model"]["layers"][1]["type"] = "flat";
  doc["model"]["layers"][2]["units"] = "four";
  doc["model"]["layers"][2]["unit"] = 4;
  const auto paths = paths_of(problems_of(doc));
  const std::vector<std::string> expected{"model.layers[0].filters", "model.layers[1].type",
                                          "model.layers[2].unit", "model.layers[2].units"};
  CHECK(paths == expected);
}
