// The sizes and anchor rows of a batch-invariance sweep (trace/invariance.h).
#include <algorithm>
#include <set>

#include "core/error.h"
#include "trace/invariance.h"

namespace ra::trace {

std::vector<int> default_invariance_sizes(int max_size) {
  if (max_size < 1) throw InputError("the largest batch size of a sweep must be at least 1");
  std::set<int> sizes;
  for (int s = 1; s <= std::min(16, max_size); ++s) sizes.insert(s);
  // Kernels switch their blocking at powers of two: each one and its neighbours.
  for (long long p = 2; p / 2 <= max_size; p *= 2) {
    for (long long s : {p - 1, p, p + 1}) {
      if (s >= 1 && s <= max_size) sizes.insert(static_cast<int>(s));
    }
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<int> parse_invariance_sizes(const std::string& text) {
  std::set<int> sizes{1};
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string piece = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t dash = piece.find('-');
    const auto number = [&](const std::string& digits) {
      if (digits.empty() || digits.size() > 7 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError("--sizes: '" + piece + "' is not a size or a range A-B of sizes");
      }
      return std::stoi(digits);
    };
    const int first = number(piece.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(piece.substr(dash + 1));
    if (first < 1 || last < first) {
      throw InputError("--sizes: '" + piece + "': batch sizes start at 1 and ranges go up");
    }
    for (int s = first; s <= last; ++s) sizes.insert(s);
  }
  return {sizes.begin(), sizes.end()};
}

int anchor_row(const std::string& position, int size) {
  if (size < 1) throw InputError("a batch of " + std::to_string(size) + " holds no anchor");
  if (position == "first") return 0;
  if (position == "middle") return size / 2;
  if (position == "last") return size - 1;
  throw InputError("anchor position '" + position + "': first, middle or last");
}

}  // namespace ra::trace
