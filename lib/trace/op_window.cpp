#include "trace/op_window.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/printable.h"

namespace ra::trace {
namespace {

std::int64_t step_number(const std::string& part, const std::string& text,
                         const std::string& option) {
  std::int64_t n = 0;
  const char* end = part.data() + part.size();
  const auto [ptr, ec] = std::from_chars(part.data(), end, n);
  if (part.empty() || ec != std::errc{} || ptr != end || n < 0) {
    throw InputError(option + ": '" + printable(text) +
                     "' is not a step window (N, A:B, A: or all; N, A and B step numbers)");
  }
  return n;
}

}  // namespace

OpWindow parse_op_window(const std::string& text, const std::string& option) {
  if (text == "all") return OpWindow{};
  const auto colon = text.find(':');
  OpWindow w;
  if (colon == std::string::npos) {  // "N": step N alone, N:N+1 (what a first try writes)
    w.first = step_number(text, text, option);
    if (w.first == std::numeric_limits<std::int64_t>::max()) {
      throw InputError(option + ": step " + text + " is past the last step a trace can hold");
    }
    w.last = w.first + 1;
    return w;
  }
  w.first = step_number(text.substr(0, colon), text, option);
  if (colon + 1 < text.size()) {
    w.last = step_number(text.substr(colon + 1), text, option);
    if (*w.last <= w.first) {
      throw InputError(option + ": the window " + printable(text) +
                       " holds no step (B must be greater than A)");
    }
  }
  return w;
}

std::string to_string(const OpWindow& window) {
  if (window.first == 0 && !window.last) return "all";
  return std::to_string(window.first) + ":" + (window.last ? std::to_string(*window.last) : "");
}

}  // namespace ra::trace
