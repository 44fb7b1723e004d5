#pragma once
// Typed, path-aware reading of JSON values for spec validation (internal to lib/spec).
//
// Every reader records a Problem{path, "expected ..., got ..."} and carries on, so one pass over a
// document finds all of its problems. Readers never throw for bad input.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace ra::spec::detail {

using Json = nlohmann::json;
using Problems = std::vector<Problem>;

// "model" + "layers" -> "model.layers"; "" + "seed" -> "seed". Keys that are not plain words are
// quoted: "determinism.ops" + "a b" -> determinism.ops["a b"].
std::string child_path(const std::string& parent, std::string_view key);
// "model.layers" + 2 -> "model.layers[2]".
std::string index_path(const std::string& parent, std::size_t index);
// A short rendering of a value for "got ..." in messages: -3, 1.5, "sixteen", true, an object;
// bounded in length and work whatever the value (formats/json_text.h json_excerpt).
std::string describe(const Json& value);

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
// Work stops as soon as the distance is known to exceed `limit` (limit + 1 is returned then):
// O(|a| |b|) time at worst, O(|b|) memory, and O(1) when the lengths differ by more than `limit`.
std::size_t edit_distance(std::string_view a, std::string_view b,
                          std::size_t limit = std::numeric_limits<std::size_t>::max() - 1);
// Words longer than this get no "did you mean": no key or name of a spec is half as long.
inline constexpr std::size_t kMaxSuggestionLength = 64;
// The candidate closest to `word` when it is close enough to be a likely typo: distance <= 1 for
// words of up to 4 letters, <= 2 up to 8, <= 3 beyond (the longer of the word and the candidate).
// Ties go to the first candidate.
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);

// Inclusive integer range.
struct IntRange {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
  // "a positive integer", "an integer in 1..65536", ...; a max of INT_MAX or more is left out.
  std::string describe() const;
};

// Real range with open or closed ends (infinite ends mean unbounded).
struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
  std::string describe() const;  // "a number > 0", "a number in [0, 1)", ...
};
inline constexpr RealRange kPositive{0.0, true};
inline constexpr RealRange kNonNegative{0.0, false};
inline constexpr RealRange kUnitInterval{0.0, false, 1.0, true};  // [0, 1)

// Single values. Each returns nullopt after recording a problem at `path`.
// Integers: JSON integers, or floats with an integral value (2.0 reads as 2, 1.5 is an error);
// booleans are never numbers.
std::optional<std::int64_t> read_integer(const Json& v, const std::string& path, IntRange range,
                                         Problems& problems);
std::optional<std::uint64_t> read_uint64(const Json& v, const std::string& path,
                                         Problems& problems);
std::optional<double> read_real(const Json& v, const std::string& path, RealRange range,
                                Problems& problems);
// A real stored as float: the range is checked on the float value (0.99999999 rounds to 1.0f).
std::optional<float> read_float(const Json& v, const std::string& path, RealRange range,
                                Problems& problems);
std::optional<bool> read_bool(const Json& v, const std::string& path, Problems& problems);
std::optional<std::string> read_string(const Json& v, const std::string& path, Problems& problems);
// One of `names`; returns its index.
std::optional<std::size_t> read_choice(const Json& v, const std::string& path,
                                       const std::vector<std::string>& names, Problems& problems);

// The keys of one JSON object: finds them, reports missing required ones and, in
// report_unknown_keys, every key that was not in the allowed list.
class ObjectReader {
 public:
  // A value that is not an object is reported at `path` ("expected an object") and reads as empty.
  ObjectReader(const Json& value, std::string path, Problems& problems);

  bool is_object() const noexcept { return object_ != nullptr; }
  const std::string& path() const noexcept { return path_; }
  std::string path_of(std::string_view key) const { return child_path(path_, key); }
  Problems& problems() noexcept { return problems_; }

  // The value of `key`, or nullptr when absent.
  const Json* find(std::string_view key) const;
  // Like find, and reports "missing required key" with what was expected when absent.
  const Json* require(std::string_view key, std::string_view expected);

  // Reports every key that is not in `allowed`, suggesting the closest allowed key when there is a
  // likely typo. `owner` names what the object is, for the list of allowed keys
  // ("conv2d layers").
  void report_unknown_keys(const std::vector<std::string>& allowed, std::string_view owner);

  // Optional fields: `out` keeps its default when the key is absent or invalid. Return true when
  // the key was present and valid.
  template <class Int>
  bool integer(std::string_view key, Int& out, IntRange range) {
    const Json* v = find(key);
    if (v == nullptr) return false;
    auto value = read_integer(*v, path_of(key), range, problems_);
    if (value) out = static_cast<Int>(*value);
    return value.has_value();
  }
  bool uint64(std::string_view key, std::uint64_t& out);
  bool real(std::string_view key, double& out, RealRange range);
  bool real(std::string_view key, float& out, RealRange range);
  bool boolean(std::string_view key, bool& out);
  bool string(std::string_view key, std::string& out);
  // Enumerations named by `to_string(E)` (spec/spec.h) over `values`.
  template <class E>
  bool choice(std::string_view key, E& out, const std::vector<E>& values) {
    const Json* v = find(key);
    if (v == nullptr) return false;
    std::vector<std::string> names;
    for (E e : values) names.emplace_back(to_string(e));
    auto index = read_choice(*v, path_of(key), names, problems_);
    if (index) out = values[*index];
    return index.has_value();
  }

 private:
  const Json* object_ = nullptr;
  std::string path_;
  Problems& problems_;
};

}  // namespace ra::spec::detail
