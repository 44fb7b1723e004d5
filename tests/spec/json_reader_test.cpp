// The helpers behind the spec's error messages: typo distance, suggestions, paths, integers.
#include <catch2/catch.hpp>

#include "spec/json_reader.h"

using namespace ra::spec::detail;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps", "[spec]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("filter", "filters") == 1);   // insertion
  CHECK(edit_distance("kernel", "kernl") == 1);     // deletion
  CHECK(edit_distance("stride", "strife") == 1);    // substitution
  CHECK(edit_distance("padding", "paddnig") == 1);  // adjacent swap
  CHECK(edit_distance("Units", "units") == 0);      // case is ignored
  CHECK(edit_distance("kitten", "sitting") == 3);   // the textbook example
  CHECK(edit_distance("abc", "") == 3);
}

TEST_CASE("suggestions are made only for likely typos", "[spec]") {
  const std::vector<std::string> keys{"filters", "kernel", "stride", "padding", "lr"};
  CHECK(closest_match("filter", keys) == std::optional<std::string>("filters"));
  CHECK(closest_match("kernal", keys) == std::optional<std::string>("kernel"));
  CHECK(closest_match("LR", keys) == std::optional<std::string>("lr"));
  CHECK_FALSE(closest_match("momentum", keys));
  CHECK_FALSE(closest_match("x", keys));  // 2 edits from "lr", its nearest; 1 is the limit here
  CHECK_FALSE(closest_match("filter", {}));
}

TEST_CASE("paths and value descriptions", "[spec]") {
  CHECK(child_path("", "seed") == "seed");
  CHECK(child_path("model", "layers") == "model.layers");
  CHECK(index_path("model.layers", 2) == "model.layers[2]");
  CHECK(child_path("determinism.ops", "loss") == "determinism.ops.loss");
  CHECK(child_path("determinism.ops", "conv2d.backward_data") ==
        "determinism.ops[\"conv2d.backward_data\"]");
  CHECK(describe(Json(-3)) == "-3");
  CHECK(describe(Json("a")) == "\"a\"");
  CHECK(describe(Json::parse("[1, 28, 28]")) == "[1,28,28]");
  CHECK(describe(Json::parse(R"({"a": "a long string that will not fit"})")) == "an object");
}

TEST_CASE("integers: whole floats count, fractions, booleans and ranges do not", "[spec]") {
  Problems problems;
  const IntRange positive{1, std::numeric_limits<int>::max()};
  CHECK(read_integer(Json(2.0), "k", positive, problems) == 2);
  CHECK(read_integer(Json(7u), "k", positive, problems) == 7);
  CHECK(problems.empty());
  CHECK_FALSE(read_integer(Json(1.5), "k", positive, problems));
  CHECK_FALSE(read_integer(Json(true), "k", positive, problems));
  CHECK_FALSE(read_integer(Json(0), "k", positive, problems));
  CHECK_FALSE(read_integer(Json(3000000000LL), "k", positive, problems));
  CHECK_FALSE(read_integer(Json(1e300), "k", positive, problems));
  REQUIRE(problems.size() == 5);
  CHECK(problems[0].message == "expected a positive integer, got 1.5");
  CHECK(problems[3].message == "expected a positive integer <= 2147483647, got 3000000000");
  CHECK(read_uint64(Json(18446744073709551615ull), "seed", problems) == 18446744073709551615ull);
}
