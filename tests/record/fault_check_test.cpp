// --inject-fault: the option is read whole (no prefix, no sign, no wrap) and a fault that would
// never fire is refused before any run.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "data/dataset.h"
#include "record/fault_check.h"
#include "spec/parse.h"

using Catch::Matchers::Contains;

namespace {

// 40 samples in batches of 16: batches of 16, 16 and 8 per epoch; 2 epochs = 6 steps.
ra::spec::ExperimentSpec forty_samples_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "data": {"train": {"format": "random", "samples": 40, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "use_bias": false},
      {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "train": {"epochs": 2}})"),
                              ".");
}

std::string refusal(const std::string& text, const ra::spec::ExperimentSpec& s,
                    const ra::data::Dataset& train) {
  try {
    ra::record::validate_fault(ra::record::parse_fault(text), s, train);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("accepted --inject-fault " << text);
  return {};
}

}  // namespace

TEST_CASE("parse_fault reads whole non-negative numbers", "[audit][fault]") {
  const auto f = ra::record::parse_fault("run=1,step=4,tensor=dense_0.weight,element=7,bit=31");
  CHECK(f.run == 1);
  CHECK(f.step == 4);
  CHECK(f.tensor == "dense_0.weight");
  CHECK(f.element == 7);
  CHECK(f.bit == 31);
  CHECK_THROWS_WITH(ra::record::parse_fault("run=1x,tensor=batch"),
                    Contains("run must be an integer") && Contains("'1x'"));
  CHECK_THROWS_WITH(ra::record::parse_fault("step=-1,tensor=batch"), Contains("step must be"));
  CHECK_THROWS_WITH(ra::record::parse_fault("element=99999999999999999999,tensor=x"),
                    Contains("element must be"));
  CHECK_THROWS_WITH(ra::record::parse_fault("bit=32,tensor=x"), Contains("bit must be"));
  CHECK_THROWS_WITH(ra::record::parse_fault("step=,tensor=x"), Contains("got ''"));
  CHECK_THROWS_WITH(ra::record::parse_fault("step=1"), Contains("needs either tensor="));
}

TEST_CASE("validate_fault refuses faults that never fire", "[audit][fault]") {
  const ra::spec::ExperimentSpec s = forty_samples_spec();
  const ra::data::Dataset train = ra::data::load_dataset(s.data.train, 1.0f, "train");
  CHECK_NOTHROW(
      ra::record::validate_fault(ra::record::parse_fault("step=5,tensor=batch"), s, train));
  CHECK_THAT(refusal("step=6,tensor=batch", s, train),
             Contains("step 6 never runs") && Contains("6 steps (0..5)"));
  // conv2d_0 has no bias; dense_0.weight is [3, 32] = 96 elements.
  CHECK_THAT(refusal("tensor=conv2d_0.bias", s, train),
             Contains("no tensor 'conv2d_0.bias'") &&
                 Contains("batch, conv2d_0.weight, dense_0.weight, dense_0.bias"));
  CHECK_NOTHROW(ra::record::validate_fault(
      ra::record::parse_fault("tensor=dense_0.weight,element=95"), s, train));
  CHECK_THAT(refusal("tensor=dense_0.weight,element=96", s, train),
             Contains("element 96 is outside dense_0.weight (96 elements, 0..95)"));
}

TEST_CASE("a batch fault needs two samples in its step's batch", "[audit][fault]") {
  ra::spec::ExperimentSpec s = forty_samples_spec();
  s.data.train.samples = 33;  // batches of 16, 16 and 1
  const ra::data::Dataset train = ra::data::load_dataset(s.data.train, 1.0f, "train");
  CHECK_NOTHROW(
      ra::record::validate_fault(ra::record::parse_fault("step=4,tensor=batch"), s, train));
  CHECK_THAT(refusal("step=5,tensor=batch", s, train), Contains("the batch of step 5 holds 1"));
}
