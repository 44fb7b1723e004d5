// data.augment: whole-pixel shifts and flips, and Keras' ImageDataGenerator-style fractional
// shifts with their fill mode; the canonical form of the specs written before the latter keeps
// its bytes (and so its digest).
#include <catch2/catch.hpp>

#include "spec/parse.h"
#include "spec/spec_test_util.h"

using namespace ra::spec;
using ra::spec::test::json;
using ra::spec::test::only_problem;
using ra::spec::test::small_doc;

TEST_CASE("augment: Keras' width and height shift ranges and fill mode", "[spec][augment]") {
  json doc = small_doc();
  doc["data"]["augment"] = {{"width_shift_range", 0.1},
                            {"height_shift_range", 0.1},
                            {"fill_mode", "nearest"},
                            {"flip", true}};
  const ExperimentSpec s = parse_spec(doc, "/specs");
  CHECK(s.data.augment.width_shift_range == 0.1f);
  CHECK(s.data.augment.height_shift_range == 0.1f);
  CHECK(s.data.augment.fill_mode == FillMode::nearest);
  CHECK(s.data.augment.shift == 0);
  CHECK(s.data.augment.active());
  CHECK(to_json(s)["data"]["augment"] == json{{"shift", 0},
                                              {"flip", true},
                                              {"width_shift_range", 0.1},
                                              {"height_shift_range", 0.1},
                                              {"fill_mode", "nearest"}});
  ra::spec::test::require_same(s, parse_spec(to_json(s), s.base_dir));
  // A fraction alone augments; its fill mode defaults to zeros ("constant").
  doc["data"]["augment"] = {{"width_shift_range", 0.25}};
  const ExperimentSpec w = parse_spec(doc, "/specs");
  CHECK(w.data.augment.active());
  CHECK(w.data.augment.fill_mode == FillMode::constant);
}

TEST_CASE("augment: the canonical form of whole-pixel shifts is as before", "[spec][augment]") {
  json doc = small_doc();
  doc["data"]["augment"] = {{"shift", 2}, {"flip", true}, {"fill_mode", "constant"}};
  const ExperimentSpec s = parse_spec(doc, "/specs");
  CHECK(to_json(s)["data"]["augment"].dump() == R"({"flip":true,"shift":2})");
  // Nothing that augments: no augment key at all.
  doc["data"]["augment"] = {{"fill_mode", "nearest"}, {"width_shift_range", 0}};
  CHECK_FALSE(to_json(parse_spec(doc, "/specs"))["data"].contains("augment"));
}

TEST_CASE("augment: ranges, choices and exclusive shifts are checked", "[spec][augment]") {
  json doc = small_doc();
  doc["data"]["augment"] = {{"width_shift_range", 1.0}};
  CHECK(only_problem(doc, "data.augment.width_shift_range") ==
        "expected a number in [0, 1), got 1.0");
  doc["data"]["augment"] = {{"height_shift_range", -0.1}};
  CHECK(only_problem(doc, "data.augment.height_shift_range").starts_with("expected a number in"));
  doc["data"]["augment"] = {{"fill_mode", "reflect"}};
  CHECK(only_problem(doc, "data.augment.fill_mode") ==
        "expected one of \"constant\", \"nearest\", got \"reflect\"");
  doc["data"]["augment"] = {{"shift", 3}, {"width_shift_range", 0.1}};
  CHECK(
      only_problem(doc, "data.augment").starts_with("shift (whole pixels) and width_shift_range"));
  doc["data"]["augment"] = {{"width_shift_rang", 0.1}};
  CHECK(only_problem(doc, "data.augment.width_shift_rang") ==
        "unknown key 'width_shift_rang' (did you mean 'width_shift_range'?)");
}
