#include "trace/trace_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "trace/trace_io.h"

namespace ra::trace {
namespace {

using nlohmann::json;

// Echoed input is cut to this many characters: a field of a damaged trace may be megabytes long.
constexpr std::size_t kEchoLimit = 40;

std::string truncated(std::string text) {
  if (text.size() > kEchoLimit) text = text.substr(0, kEchoLimit) + "...";
  return text;
}

// Compact JSON text, pure ASCII (control characters and non-ASCII escaped).
std::string ascii_dump(const json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

std::string describe_json(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "the string " + truncated(ascii_dump(value));
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::null:
      return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "the integer " + truncated(ascii_dump(value));
    case json::value_t::number_float:
      return "the number " + truncated(ascii_dump(value));
    default:
      return "a value of an unexpected kind";
  }
}

void Field::fail(const std::string& problem) const {
  std::string where = *where_.source + ":" + std::to_string(where_.line) + ": ";
  if (!path_.empty()) where += "field '" + path_ + "': ";
  throw InputError(where + problem);
}

void Field::expect_object() const {
  if (!value_->is_object()) fail("expected an object, found " + describe_json(*value_));
}

void Field::expect_array() const {
  if (!value_->is_array()) fail("expected an array, found " + describe_json(*value_));
}

bool Field::has(const char* key) const {
  expect_object();
  return value_->contains(key);
}

Field Field::operator[](const char* key) const {
  expect_object();
  const std::string path = path_.empty() ? std::string(key) : path_ + "." + key;
  const auto it = value_->find(key);
  if (it == value_->end()) {
    // The record itself, or the object holding the missing member, names the place.
    std::string where = *where_.source + ":" + std::to_string(where_.line) + ": ";
    throw InputError(where + "field '" + path + "' is missing");
  }
  return child(*it, path);
}

std::vector<std::pair<std::string, Field>> Field::members() const {
  expect_object();
  std::vector<std::pair<std::string, Field>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), child(it.value(), (path_.empty() ? "" : path_ + ".") + it.key()));
  }
  return out;
}

std::vector<Field> Field::elements() const {
  expect_array();
  std::vector<Field> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.push_back(child((*value_)[i], path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

bool Field::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false, found " + describe_json(*value_));
  return value_->get<bool>();
}

std::string Field::string() const {
  if (!value_->is_string()) fail("expected a string, found " + describe_json(*value_));
  return value_->get<std::string>();
}

std::string Field::nonempty_string() const {
  std::string s = string();
  if (s.empty()) fail("expected a non-empty string, found \"\"");
  return s;
}

std::int64_t Field::integer(std::int64_t min, std::int64_t max) const {
  const auto range = [&] {
    return "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
           "], found " + describe_json(*value_);
  };
  if (value_->is_number_unsigned()) {
    // (The parser keeps every non-negative integer as unsigned, 0 included.)
    const auto v = value_->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(max) || static_cast<std::int64_t>(v) < min) fail(range());
    return static_cast<std::int64_t>(v);
  }
  if (value_->is_number_integer()) {
    const auto v = value_->get<std::int64_t>();
    if (v < min || v > max) fail(range());
    return v;
  }
  fail(range());
}

std::int64_t Field::count() const {
  return integer(0, std::numeric_limits<std::int64_t>::max());
}

std::uint64_t Field::uint64() const {
  if (value_->is_number_unsigned()) return value_->get<std::uint64_t>();
  if (value_->is_number_integer() && value_->get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value_->get<std::int64_t>());
  }
  fail("expected an integer in [0, 2^64), found " + describe_json(*value_));
}

double Field::number() const {
  if (!value_->is_number()) fail("expected a number, found " + describe_json(*value_));
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number, found " + describe_json(*value_));
  return v;
}

double Field::nonnegative_number() const {
  const double v = number();
  if (v < 0) fail("expected a number >= 0, found " + describe_json(*value_));
  return v;
}

std::optional<double> Field::number_or_null() const {
  if (value_->is_null()) return std::nullopt;
  if (!value_->is_number()) fail("expected a number or null, found " + describe_json(*value_));
  return number();
}

Digest128 Field::digest() const {
  const std::string text = string();
  bool hex = text.size() == 32;
  for (std::size_t i = 0; hex && i < text.size(); ++i) hex = is_hex_digit(text[i]);
  if (!hex) fail("expected a digest (32 hex digits), found " + describe_json(*value_));
  return Digest128::from_hex(text);
}

std::vector<Digest128> Field::digests(std::size_t expected, const char* what) const {
  const std::vector<Field> items = elements();
  if (items.size() != expected) {
    fail("has " + std::to_string(items.size()) + " digests, the header names " +
         std::to_string(expected) + " " + what);
  }
  std::vector<Digest128> out;
  out.reserve(items.size());
  for (const Field& item : items) out.push_back(item.digest());
  return out;
}

std::uint32_t Field::float_bits() const {
  const std::string text = string();
  bool ok = text.size() == 10 && text[0] == '0' && text[1] == 'x';
  for (std::size_t i = 2; ok && i < text.size(); ++i) ok = is_hex_digit(text[i]);
  if (!ok) fail("expected float bits (0x and 8 hex digits), found " + describe_json(*value_));
  return bits_from_hex(text);
}

}  // namespace ra::trace
