#include "trace/tensor_digests.h"

#include <charconv>

#include "core/error.h"
#include "core/printable.h"
#include "trace/op_window.h"

namespace ra::trace {
namespace {

[[noreturn]] void malformed(const std::string& value) {
  throw InputError("--tensor-digests: '" + printable(value) +
                   "' is not a level of detail (all, none, every:K, or a step window A:B, A: "
                   "or N)");
}

std::int64_t number(const std::string& part, const std::string& value) {
  std::int64_t n = 0;
  const char* end = part.data() + part.size();
  const auto [ptr, ec] = std::from_chars(part.data(), end, n);
  if (part.empty() || ec != std::errc{} || ptr != end || n < 0) malformed(value);
  return n;
}

std::string window_text(const OpWindow& w) {
  return std::to_string(w.first) + ":" + (w.last ? std::to_string(*w.last) : "");
}

}  // namespace

TensorDigestPlan parse_tensor_digest_plan(const std::vector<std::string>& values) {
  TensorDigestPlan plan;
  bool none = false, all = false;
  for (const std::string& v : values) {
    if (v == "all") {
      all = true;
    } else if (v == "none") {
      none = true;
    } else if (v.rfind("every:", 0) == 0) {
      const std::int64_t k = number(v.substr(6), v);
      if (k < 1) {
        throw InputError("--tensor-digests: '" + printable(v) + "': K must be at least 1");
      }
      if (plan.every && *plan.every != k) {
        throw InputError("--tensor-digests: every:" + std::to_string(*plan.every) + " and " +
                         printable(v) + " both given: name one period");
      }
      plan.every = k;
    } else {
      plan.windows.push_back(parse_op_window(v, "--tensor-digests"));
    }
  }
  if (none && (all || plan.every || !plan.windows.empty())) {
    throw InputError("--tensor-digests: none excludes every other value");
  }
  // No value is the default: every step per tensor.
  if (all || values.empty()) return TensorDigestPlan{1, {}};
  return plan;
}

std::string to_string(const TensorDigestPlan& plan) {
  if (plan.all()) return "all";
  std::string out = plan.every ? "every:" + std::to_string(*plan.every) : "";
  for (const OpWindow& w : plan.windows) {
    if (!out.empty()) out += ',';
    out += window_text(w);
  }
  return out.empty() ? "none" : out;
}

nlohmann::json to_json(const TensorDigestPlan& plan) {
  nlohmann::json windows = nlohmann::json::array();
  for (const OpWindow& w : plan.windows) {
    windows.push_back(
        {{"first", w.first}, {"last", w.last ? nlohmann::json(*w.last) : nlohmann::json()}});
  }
  return {{"every", plan.every ? nlohmann::json(*plan.every) : nlohmann::json()},
          {"windows", windows}};
}

void keep_category_digests(StepRecord& r) {
  r.per_tensor = false;
  r.grads_digest = category_digest(r.grads);
  r.weights_digest = category_digest(r.weights);
  r.buffers_digest = category_digest(r.buffers);
  r.grads.clear();
  r.weights.clear();
  r.buffers.clear();
}

Digest128 category_digest(const std::vector<Digest128>& tensors) {
  // Every step of a comparison digests its categories so (compare/step_walk.cpp, outcomes): the
  // hex is written in place, not through Digest128::hex's snprintf and a string each.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(tensors.empty() ? 0 : tensors.size() * 33 - 1, '\n');
  char* out = text.data();
  for (const Digest128& d : tensors) {
    for (const std::uint64_t word : {d.high, d.low}) {
      for (int shift = 60; shift >= 0; shift -= 4) *out++ = kHex[(word >> shift) & 0xf];
    }
    ++out;  // the newline between two digests (none after the last: the string ends there)
  }
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(text.size())}, text.data(),
                      text.size());
}

}  // namespace ra::trace
