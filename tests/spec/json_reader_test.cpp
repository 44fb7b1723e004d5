// The helpers behind the spec's error messages: typo distance, suggestions, paths, integers.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

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

TEST_CASE("edit distance stops once it exceeds its limit", "[spec]") {
  CHECK(edit_distance("kitten", "sitting", 3) == 3);
  CHECK(edit_distance("kitten", "sitting", 2) == 3);  // limit + 1: "more than 2"
  CHECK(edit_distance("abcdefgh", "stuvwxyz", 1) == 2);
  CHECK(edit_distance("ab", "ba", 1) == 1);  // a swap right at the limit
  // The bounded computation agrees with the full one below its limit, on random short words of a
  // small alphabet (many near matches, swaps and length differences).
  std::uint32_t x = 12345;
  const auto word = [&x] {
    std::string w((x = x * 1664525u + 1013904223u) >> 29, ' ');
    for (char& c : w) c = static_cast<char>('a' + ((x = x * 1664525u + 1013904223u) >> 30));
    return w;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string a = word(), b = word();
    const std::size_t full = edit_distance(a, b);
    for (std::size_t limit = 0; limit <= 4; ++limit) {
      INFO(a << " / " << b << " limit " << limit);
      REQUIRE(edit_distance(a, b, limit) == std::min(full, limit + 1));
    }
  }
  // A 5 MB word against a short one: the length difference answers at once. Two 1 MB words one
  // edit apart: only the band near the diagonal is computed (7 M cells, not 10^12), in O(n)
  // memory. The bound is loose for loaded machines; the full matrix would take hours.
  const std::string huge(5 << 20, 'x');
  const std::string long_word(1 << 20, 'y');
  const auto start = std::chrono::steady_clock::now();
  CHECK(edit_distance(huge, "filters", 3) == 4);
  CHECK(edit_distance(long_word, long_word.substr(1), 3) == 1);
  CHECK_FALSE(closest_match(huge, {"filters", "kernel", "x"}));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("long keys are cut in paths and messages", "[spec]") {
  const std::string huge(5 << 20, 'k');
  const std::string path = child_path("model", huge);
  CHECK(path.size() < 120);
  CHECK(path.find("(5242880 bytes)") != std::string::npos);

  const Json doc = {{huge, 1}, {"filter", 2}};
  Problems problems;
  ObjectReader r(doc, "model.layers[0]", problems);
  const auto start = std::chrono::steady_clock::now();
  r.report_unknown_keys({"filters", "kernel"}, "conv2d layers");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].message == "unknown key 'filter' (did you mean 'filters'?)");
  const ra::Problem& big = problems[1];
  CHECK(big.path.size() + big.message.size() < 400);
  CHECK(big.message.find("unknown key 'kkkk") == 0);
  CHECK(big.message.find("(5242880 bytes)") != std::string::npos);
  // The value of a "got ..." is cut too.
  CHECK(describe(Json(huge)).size() < 80);
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
