// check_labels: a label the model has no output for is named by its sample index and file.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "data/dataset.h"

using Catch::Matchers::Contains;

TEST_CASE("labels outside the model's classes name the sample and the file", "[data][labels]") {
  ra::data::Dataset set;
  set.role = "eval";
  set.source = "/data/t10k-labels-idx1-ubyte.gz";
  set.labels = {0, 9, 3, 12, 4};
  CHECK_NOTHROW(ra::data::check_labels(set, 13));
  CHECK_THROWS_AS(ra::data::check_labels(set, 10), ra::InputError);
  CHECK_THROWS_WITH(
      ra::data::check_labels(set, 10),
      Contains("data.eval: label 12 of sample 3 in /data/t10k-labels-idx1-ubyte.gz") &&
          Contains("outside the model's 10 classes (0..9)") && Contains("13 units"));
  set.labels = {-1};
  CHECK_THROWS_WITH(ra::data::check_labels(set, 10), Contains("label -1 of sample 0"));
}

TEST_CASE("loaded sets say where their samples come from", "[data][labels]") {
  ra::spec::DatasetSpec spec;
  spec.format = ra::spec::DataFormat::constant;
  spec.samples = 4;
  spec.shape = {1, 2, 2};
  spec.classes = 2;
  CHECK(ra::data::load_dataset(spec, 1.0f, "train").source == "the train constant set");
}
