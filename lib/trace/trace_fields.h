#pragma once
// Checked reading of the fields of one trace record. The trace reader reads every value through a
// Field, which checks the JSON type (and range) before converting and throws InputError naming
// the file, the line and the field path ("run-000.trace.jsonl:1: field 'seeds.init': expected a
// non-negative integer, found the string \"x\""), so no nlohmann exception escapes the reader and
// a damaged trace is bad input (exit 2), never an internal error.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/digest.h"

namespace ra::trace {

// Where a record was read from: the file and the 1-based line.
struct RecordLocation {
  const std::string* source = nullptr;
  std::size_t line = 0;
};

// One JSON value of a record and its path within it ("" for the record itself, "seeds.init",
// "params[2].shape"). Refers to the record, which must outlive it.
class Field {
 public:
  Field(const nlohmann::json& value, RecordLocation where, std::string path = "")
      : value_(&value), where_(where), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }

  // "<file>:<line>: field '<path>': <problem>" (without the field part for the record itself).
  [[noreturn]] void fail(const std::string& problem) const;

  // Members of an object (InputError unless this is an object; `[]` also unless `key` is present).
  bool has(const char* key) const;
  Field operator[](const char* key) const;
  std::vector<std::pair<std::string, Field>> members() const;
  // Elements of an array (InputError unless this is an array).
  std::vector<Field> elements() const;

  // Type checks and conversions; each throws InputError naming the field and what it found.
  void expect_object() const;
  void expect_array() const;
  bool is_null() const { return value_->is_null(); }
  bool boolean() const;
  std::string string() const;
  std::string nonempty_string() const;
  // An integer in [min, max] (JSON integers only: 1.0, "1" and true are not integers).
  std::int64_t integer(std::int64_t min, std::int64_t max) const;
  std::int64_t count() const;  // a non-negative integer
  std::uint64_t uint64() const;
  double number() const;  // any finite JSON number
  double nonnegative_number() const;
  std::optional<double> number_or_null() const;
  Digest128 digest() const;  // 32 hex digits
  std::vector<Digest128> digests(std::size_t expected, const char* what) const;
  std::uint32_t float_bits() const;  // "0x" and 8 hex digits

 private:
  Field child(const nlohmann::json& value, std::string path) const {
    return Field(value, where_, std::move(path));
  }

  const nlohmann::json* value_;
  RecordLocation where_;
  std::string path_;
};

// What a JSON value is, for messages: "an array", "the integer 2", "the string \"1\"" (long
// strings and numbers truncated, control characters escaped).
std::string describe_json(const nlohmann::json& value);

}  // namespace ra::trace
