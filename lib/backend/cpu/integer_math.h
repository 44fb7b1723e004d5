#pragma once
// Integer helpers of the CPU backend's blocking arithmetic (tiles, lanes, valid output ranges),
// written once: several units had private copies.
#include <cstdint>

namespace ra::backend::cpu {

// ceil(a / b) for a >= 0, b > 0.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The smallest multiple of `multiple` (> 0) that is >= value (>= 0).
constexpr std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return ceil_div(value, multiple) * multiple;
}

}  // namespace ra::backend::cpu
