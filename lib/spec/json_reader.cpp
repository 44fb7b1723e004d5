#include "spec/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "core/text_excerpt.h"
#include "formats/json_text.h"

namespace ra::spec::detail {
namespace {

bool is_plain_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(),
                                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string single_quoted(std::string_view s) {
  std::string out(1, '\'');  // built in steps: GCC 12 warns falsely (-Wrestrict) on "'" + s
  out.append(s);
  out.push_back('\'');
  return out;
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out += separator;
    out += words[i];
  }
  return out;
}

void expected(Problems& problems, const std::string& path, const std::string& what,
              const Json& got) {
  problems.push_back({path, "expected " + what + ", got " + describe(got)});
}

// The integral value of a JSON number, when it has one that fits in int64. Floats count when they
// are whole numbers: 2.0 and 1e3 are integers, 1.5 is not. |x| < 2^63 keeps the cast defined.
std::optional<std::int64_t> integral_value(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return {};
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      return static_cast<std::int64_t>(d);
    }
  }
  return {};
}

}  // namespace

std::string child_path(const std::string& parent, std::string_view key) {
  // Keys longer than an excerpt are shown cut, like any echoed input (core/text_excerpt.h).
  if (key.size() > kExcerptBytes || !is_plain_key(key)) {
    return parent + "[" + formats::json_string_excerpt(key) + "]";
  }
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string describe(const Json& value) {
  if (value.is_object() || value.is_array()) {
    // Short arrays read best as themselves ([1, 28]); anything longer by its kind. The excerpt
    // stops early, so a huge or deeply nested value costs no more than a short one.
    const std::string text = formats::json_excerpt(value, 24);
    if (text.size() <= 24 && text.find("...") == std::string::npos) return text;
    return value.is_object() ? "an object" : "an array of " + std::to_string(value.size());
  }
  return formats::json_excerpt(value);
}

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  // Every edit changes the length by at most one, so the length difference is a lower bound.
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  // d[i][j]: distance between the first i letters of a and the first j of b. A cell off the
  // diagonal by more than `limit` exceeds it, so only the band |i - j| <= limit is computed, and
  // values are capped at `over` (limit + 1): O(|a| (2 limit + 1)) time. Three rows are kept
  // (i - 2 for transpositions, i - 1, i): O(|b|) memory instead of O(|a| |b|).
  const std::size_t over = limit + 1;
  std::vector<std::size_t> before(b.size() + 1, over), above(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) above[j] = std::min(j, over);
  std::size_t above_min = 0;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    const std::size_t lo = i > limit ? i - limit : 1;
    const std::size_t hi = b.size() - std::min(b.size(), i) <= limit ? b.size() : i + limit;
    // The cell left of the band reads as "over" (row 0 of each row holds i while it fits).
    row[lo - 1] = lo == 1 ? std::min(i, over) : over;
    std::size_t row_min = row[lo - 1];
    for (std::size_t j = lo; j <= hi; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      std::size_t d = std::min({above[j] + 1, row[j - 1] + 1, above[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d = std::min(d, before[j - 2] + 1);
      }
      row[j] = std::min(d, over);
      row_min = std::min(row_min, row[j]);
    }
    // The next row reads one cell right of this band: it must read as "over", not a stale value.
    if (hi < b.size()) row[hi + 1] = over;
    // Each cell comes from the two rows above it at no smaller cost: once two consecutive rows
    // exceed the limit, every later one does too.
    if (row_min > limit && above_min > limit) return over;
    above_min = row_min;
    std::swap(before, above);
    std::swap(above, row);
  }
  return std::min(above[b.size()], over);
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  // Keys of this tool are short words; a long one is no typo of them (and refusing it here keeps a
  // key megabytes long from being compared with every candidate).
  if (word.size() > kMaxSuggestionLength) return {};
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const std::size_t length = std::max(word.size(), c.size());
    const std::size_t allowed = length <= 4 ? 1 : length <= 8 ? 2 : 3;
    const std::size_t distance = edit_distance(word, c, allowed);
    if (distance > allowed) continue;
    if (!best || distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

std::string IntRange::describe() const {
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  // Fields stored as int are capped at INT_MAX; that is a limit of the type, not of the meaning,
  // and is only named when it is hit (see read_integer).
  if (max >= std::numeric_limits<int>::max()) {
    if (min == 1) return "a positive integer";
    if (min == 0) return "a non-negative integer";
    if (min == kMin) return "an integer";
    return "an integer >= " + std::to_string(min);
  }
  return "an integer in " + std::to_string(min) + ".." + std::to_string(max);
}

std::string RealRange::describe() const {
  const bool bounded_below = std::isfinite(min), bounded_above = std::isfinite(max);
  if (bounded_below && bounded_above) {
    return std::string("a number in ") + (min_open ? "(" : "[") + number_text(min) + ", " +
           number_text(max) + (max_open ? ")" : "]");
  }
  if (bounded_below) return std::string("a number ") + (min_open ? "> " : ">= ") + number_text(min);
  if (bounded_above) return std::string("a number ") + (max_open ? "< " : "<= ") + number_text(max);
  return "a number";
}

std::optional<std::int64_t> read_integer(const Json& v, const std::string& path, IntRange range,
                                         Problems& problems) {
  const auto value = v.is_number() ? integral_value(v) : std::nullopt;
  if (!value || *value < range.min || *value > range.max) {
    std::string what = range.describe();
    if (value && *value > range.max && what.find("..") == std::string::npos) {
      what += " <= " + std::to_string(range.max);
    }
    expected(problems, path, what, v);
    return {};
  }
  return value;
}

std::optional<std::uint64_t> read_uint64(const Json& v, const std::string& path,
                                         Problems& problems) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  const auto value = v.is_number() ? integral_value(v) : std::nullopt;
  if (!value || *value < 0) {
    expected(problems, path, "a non-negative integer", v);
    return {};
  }
  return static_cast<std::uint64_t>(*value);
}

std::optional<double> read_real(const Json& v, const std::string& path, RealRange range,
                                Problems& problems) {
  if (!v.is_number()) {
    expected(problems, path, range.describe(), v);
    return {};
  }
  const double d = v.get<double>();
  const bool below = range.min_open ? !(d > range.min) : !(d >= range.min);
  const bool above = range.max_open ? !(d < range.max) : !(d <= range.max);
  if (!std::isfinite(d) || below || above) {
    expected(problems, path, range.describe(), v);
    return {};
  }
  return d;
}

std::optional<float> read_float(const Json& v, const std::string& path, RealRange range,
                                Problems& problems) {
  auto d = read_real(v, path, range, problems);
  if (!d) return {};
  // The value is used as float: it must be finite there and keep its range after rounding.
  const float f = static_cast<float>(*d);
  if (!std::isfinite(f)) {
    expected(problems, path, range.describe() + " within the float range", v);
    return {};
  }
  const bool below = range.min_open ? !(f > range.min) : !(f >= range.min);
  const bool above = range.max_open ? !(f < range.max) : !(f <= range.max);
  if (below || above) {
    problems.push_back({path, "expected " + range.describe() + ", got " + describe(v) +
                                  ", which rounds to " + number_text(f) + " as a float"});
    return {};
  }
  return f;
}

std::optional<bool> read_bool(const Json& v, const std::string& path, Problems& problems) {
  if (!v.is_boolean()) {
    expected(problems, path, "true or false", v);
    return {};
  }
  return v.get<bool>();
}

std::optional<std::string> read_string(const Json& v, const std::string& path, Problems& problems) {
  if (!v.is_string()) {
    expected(problems, path, "a string", v);
    return {};
  }
  return v.get<std::string>();
}

std::optional<std::size_t> read_choice(const Json& v, const std::string& path,
                                       const std::vector<std::string>& names, Problems& problems) {
  std::vector<std::string> listed;
  for (const auto& n : names) listed.push_back(Json(n).dump());
  const std::string expectation = "one of " + join(listed, ", ");
  if (!v.is_string()) {
    expected(problems, path, expectation, v);
    return {};
  }
  const auto s = v.get<std::string>();
  const auto it = std::find(names.begin(), names.end(), s);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  std::string message = "expected " + expectation + ", got " + describe(v);
  if (auto near = closest_match(s, names)) message += " (did you mean " + Json(*near).dump() + "?)";
  problems.push_back({path, message});
  return {};
}

ObjectReader::ObjectReader(const Json& value, std::string path, Problems& problems)
    : path_(std::move(path)), problems_(problems) {
  if (value.is_object()) {
    object_ = &value;
  } else {
    expected(problems_, path_, "an object", value);
  }
}

const Json* ObjectReader::find(std::string_view key) const {
  if (object_ == nullptr) return nullptr;
  const auto it = object_->find(key);
  return it == object_->end() ? nullptr : &*it;
}

const Json* ObjectReader::require(std::string_view key, std::string_view expected_value) {
  const Json* v = find(key);
  if (v == nullptr && object_ != nullptr) {
    problems_.push_back({path_of(key), "missing required key " + single_quoted(key) +
                                           " (expected " + std::string(expected_value) + ")"});
  }
  return v;
}

void ObjectReader::report_unknown_keys(const std::vector<std::string>& allowed,
                                       std::string_view owner) {
  if (object_ == nullptr) return;
  for (const auto& [key, value] : object_->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string message = "unknown key " + quoted_excerpt(key);
    if (auto near = closest_match(key, allowed)) {
      message += " (did you mean " + single_quoted(*near) + "?)";
    } else {
      message += " (" + std::string(owner) + " take: " + join(allowed, ", ") + ")";
    }
    problems_.push_back({path_of(key), message});
  }
}

bool ObjectReader::uint64(std::string_view key, std::uint64_t& out) {
  const Json* v = find(key);
  if (v == nullptr) return false;
  auto value = read_uint64(*v, path_of(key), problems_);
  if (value) out = *value;
  return value.has_value();
}

bool ObjectReader::real(std::string_view key, double& out, RealRange range) {
  const Json* v = find(key);
  if (v == nullptr) return false;
  auto value = read_real(*v, path_of(key), range, problems_);
  if (value) out = *value;
  return value.has_value();
}

bool ObjectReader::real(std::string_view key, float& out, RealRange range) {
  const Json* v = find(key);
  if (v == nullptr) return false;
  auto value = read_float(*v, path_of(key), range, problems_);
  if (value) out = *value;
  return value.has_value();
}

bool ObjectReader::boolean(std::string_view key, bool& out) {
  const Json* v = find(key);
  if (v == nullptr) return false;
  auto value = read_bool(*v, path_of(key), problems_);
  if (value) out = *value;
  return value.has_value();
}

bool ObjectReader::string(std::string_view key, std::string& out) {
  const Json* v = find(key);
  if (v == nullptr) return false;
  auto value = read_string(*v, path_of(key), problems_);
  if (value) out = *value;
  return value.has_value();
}

}  // namespace ra::spec::detail
