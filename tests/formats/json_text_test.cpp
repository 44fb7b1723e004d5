// The strict JSON parser of users' files: it reads what nlohmann reads, into the same value types,
// and refuses duplicate keys, numbers out of range, deep nesting and malformed text with an
// InputError "<source>:<line>:<column>: ...". Also the bounded renderings used in messages.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "core/error.h"
#include "formats/json_text.h"

using ra::formats::json_excerpt;
using ra::formats::json_string_excerpt;
using ra::formats::kMaxJsonDepth;
using ra::formats::parse_json_text;
using Json = nlohmann::json;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// The message of the InputError that parsing `text` (as "doc.json", lines from `first_line`)
// throws.
std::string error_of(const std::string& text, std::size_t first_line = 1) {
  try {
    parse_json_text(text, "doc.json", first_line);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("accepted: " << text.substr(0, 200));
  return {};
}

}  // namespace

TEST_CASE("json_text reads valid documents as nlohmann does, types included", "[spec][json]") {
  const char* documents[] = {
      R"({"a": 1, "b": -2, "c": 1.5, "d": -0, "e": -0.0, "f": 1e3, "g": 18446744073709551615,
          "h": -9223372036854775808, "i": 4.9e-324, "j": 1.7976931348623157e308})",
      R"(["x", "\"\\\/\b\f\n\r\t", "\u00e9\u4e2d\ud83d\ude00", "é中😀", true, false, null, [], {}])",
      "  [1, [2, [3, {\"k\": [4]}]]]\r\n",
      "\"just a string\"",
      "0",
  };
  for (const char* text : documents) {
    INFO(text);
    const Json ours = parse_json_text(text, "doc.json");
    const Json theirs = Json::parse(text);
    CHECK(ours == theirs);
    CHECK(ours.dump() == theirs.dump());  // the same types: trace digests hash dump()
  }
  const Json numbers = parse_json_text("[1, -1, 1.0, -0]", "doc.json");
  CHECK(numbers[0].is_number_unsigned());
  CHECK(numbers[1].is_number_integer());
  CHECK_FALSE(numbers[1].is_number_unsigned());
  CHECK(numbers[2].is_number_float());
  CHECK(numbers[3].is_number_integer());
  // A UTF-8 byte-order mark (Windows editors) is skipped.
  CHECK(parse_json_text("\xEF\xBB\xBF{\"a\": 1}", "doc.json") == Json{{"a", 1}});
}

TEST_CASE("json_text refuses a repeated key with its line and column", "[spec][json]") {
  const std::string message = error_of("{\n  \"lr\": 0.1,\n  \"seed\": 1,\n  \"lr\": 10\n}");
  CHECK_THAT(message, StartsWith("doc.json:4:3: duplicate key \"lr\""));
  // In nested objects too, and the same key in sibling objects is fine.
  CHECK_THAT(error_of(R"({"a": {"x": 1, "x": 1}})"), StartsWith("doc.json:1:16: duplicate key"));
  CHECK(parse_json_text(R"([{"x": 1}, {"x": 2}])", "doc.json").size() == 2);
  // Keys equal after unescaping are the same key.
  CHECK_THAT(error_of(R"({"a": 1, "\u0061": 2})"), Contains("duplicate key \"a\""));
}

TEST_CASE("json_text refuses numbers that do not fit their type", "[spec][json]") {
  CHECK_THAT(error_of("{\"lr\": 1e400}"), StartsWith("doc.json:1:8: number 1e400 is out of range"));
  CHECK_THAT(error_of("[-1e400]"), Contains("number -1e400 is out of range"));
  CHECK_THAT(error_of("[1e-400]"), Contains("number 1e-400 is out of range"));
  CHECK_THAT(error_of("[18446744073709551616]"),
             Contains("integer 18446744073709551616 is out of range"));
  CHECK_THAT(error_of("[-9223372036854775809]"), Contains("is out of range"));
  // A 400-digit integer: refused, and echoed only in part.
  const std::string digits(400, '7');
  const std::string message = error_of("{\n \"seed\": " + digits + "}");
  CHECK_THAT(message, StartsWith("doc.json:2:10: integer 7777"));
  CHECK_THAT(message, Contains("(400 bytes)"));
  CHECK(message.size() < 300);
}

TEST_CASE("json_text caps the nesting depth without using the stack for it", "[spec][json]") {
  const auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
  };
  CHECK(parse_json_text(nested(kMaxJsonDepth), "doc.json").is_array());
  CHECK_THAT(error_of(nested(kMaxJsonDepth + 1)),
             StartsWith("doc.json:1:" + std::to_string(kMaxJsonDepth + 1) +
                        ": objects and arrays nest deeper than 64 levels"));
  // 100,000 levels overflowed nlohmann's recursive parser (a crash); here they are an error.
  CHECK_THAT(error_of(nested(100000)), Contains("deeper than 64 levels"));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  CHECK_THAT(error_of(objects), Contains("deeper than 64 levels"));
}

TEST_CASE("json_text names line and column of syntax errors", "[spec][json]") {
  CHECK_THAT(error_of("{\n  \"name\": \"x\",\n  \"seed\": ,\n}\n"),
             StartsWith("doc.json:3:11: invalid JSON: expected a value, found ','"));
  CHECK_THAT(error_of(""),
             StartsWith("doc.json:1:1: invalid JSON: expected a value, found the end"));
  CHECK_THAT(error_of("{\"a\": 1,}"), StartsWith("doc.json:1:9: invalid JSON: a ',' before '}'"));
  CHECK_THAT(error_of("[1, 2,]"), Contains("a ',' before ']'"));
  CHECK_THAT(error_of("{\"a\" 1}"), Contains("expected ':' after the key, found '1'"));
  CHECK_THAT(error_of("{a: 1}"), Contains("expected a key in double quotes, found 'a'"));
  CHECK_THAT(error_of("[True]"), Contains("expected a value, found 'True'"));
  CHECK_THAT(error_of("[NaN]"), Contains("found 'NaN'"));
  CHECK_THAT(error_of("[01]"), Contains("leading zero"));
  CHECK_THAT(error_of("[1.]"), Contains("expected a digit after the decimal point"));
  CHECK_THAT(error_of("[1e]"), Contains("expected a digit in the exponent"));
  CHECK_THAT(error_of("{} {}"), StartsWith("doc.json:1:4: invalid JSON: unexpected '{' after"));
  CHECK_THAT(error_of("[\"abc"), StartsWith("doc.json:1:2: invalid JSON: a string that is never"));
  CHECK_THAT(error_of("[\"a\tb\"]"), Contains("control character U+0009 inside a string"));
  CHECK_THAT(error_of("[\"\\x\"]"), Contains("unknown escape"));
  CHECK_THAT(error_of("[\"\\u12\"]"), Contains("\\u needs 4 hex digits"));
  CHECK_THAT(error_of("[\"\\ud83d\"]"), Contains("high surrogate without its low half"));
  CHECK_THAT(error_of("[\"\\ude00\"]"), Contains("lone low surrogate"));
  CHECK_THAT(error_of("[\"\xC3\x28\"]"), Contains("not valid UTF-8"));
  CHECK_THAT(error_of("[\"\xED\xA0\x80\"]"), Contains("not valid UTF-8"));  // a UTF-8 surrogate
  CHECK_THAT(error_of("[\"\xC0\xAF\"]"), Contains("not valid UTF-8"));      // overlong '/'
  CHECK_THAT(error_of("[\x01]"), Contains("found byte 0x01"));
  // Columns count characters: "é" is two bytes and one column.
  CHECK_THAT(error_of("[\"é\", ?]"), StartsWith("doc.json:1:7:"));
  // A trace passes the number of the line it parses.
  CHECK_THAT(error_of("{\"a\": }", 42), StartsWith("doc.json:42:7:"));
}

TEST_CASE("json_excerpt renders values briefly whatever their size or depth", "[spec][json]") {
  CHECK(json_excerpt(Json::parse(R"({"a": [1, 2.5, "x"], "b": null})")) ==
        R"({"a":[1,2.5,"x"],"b":null})");
  const Json huge_string(std::string(5 << 20, 'k'));
  const std::string s = json_excerpt(huge_string);
  CHECK(s.size() < 80);
  CHECK_THAT(s, StartsWith("\"kkkk") && Contains("...\""));
  Json big_array = Json::array();
  for (int i = 0; i < 100000; ++i) big_array.push_back(i);
  CHECK(json_excerpt(big_array).size() < 100);
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i) deep = Json::array({deep});
  CHECK(json_excerpt(deep) == "[[[[[...]]]]]");
  // Invalid UTF-8 in a value built in code is replaced, not thrown about.
  CHECK_NOTHROW(json_excerpt(Json(std::string("\xFF"))));

  CHECK(json_string_excerpt("ab\"c") == "\"ab\\\"c\"");
  const std::string long_key = json_string_excerpt(std::string(1000, 'z'));
  CHECK_THAT(long_key, EndsWith("...\" (1000 bytes)"));
  CHECK(long_key.size() < 100);
}

TEST_CASE("json_text parses large documents in linear time", "[spec][json]") {
  // 1 MB of small records and a 5 MB string: a fraction of a second each (the bound is loose for
  // loaded machines; quadratic work would take minutes).
  std::string records = "[";
  for (int i = 0; i < 20000; ++i) records += R"({"step": 1, "loss": 0.5, "id": "abcdefgh"},)";
  records += "{}]";
  const auto start = std::chrono::steady_clock::now();
  CHECK(parse_json_text(records, "doc.json").size() == 20001);
  CHECK(parse_json_text("\"" + std::string(5 << 20, 'q') + "\"", "doc.json").size() == 1);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}
