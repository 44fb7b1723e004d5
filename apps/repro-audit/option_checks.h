#pragma once
// Checks of command-line numbers that CLI11's own validators let through.
//  - CLI::PositiveNumber accepts "nan" and "inf" (NaN <= 0 is false): a NaN tolerance would make
//    every loss comparison false and an infinite one every comparison true.
//  - An unsigned option reads "-1" as 2^64 - 1 (strtoull wraps negative input).
// Both run on the text, before the conversion, and name the option in their message.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ra::app {

// A finite number > 0.
inline CLI::Validator finite_positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
            !std::isfinite(value) || !(value > 0.0)) {
          return "expected a finite number > 0, got '" + text + "'";
        }
        return {};
      },
      "FINITE > 0");
}

// A whole decimal number in 0..2^64 - 1: digits only, no sign.
inline CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        if (digits) (void)std::strtoull(text.c_str(), nullptr, 10);
        if (!digits || errno == ERANGE) {
          return "expected an integer in 0..18446744073709551615, got '" + text + "'";
        }
        return {};
      },
      "UINT64");
}

// A whole decimal number in min..max: digits only, checked before CLI11 converts it (its
// conversion clamps 99999999999999999999 to the type's largest value instead of refusing it, and
// reads "-1" into an unsigned type as 2^64 - 1).
inline CLI::Validator whole_number_in(long long min, long long max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || value < static_cast<unsigned long long>(min) ||
            value > static_cast<unsigned long long>(max)) {
          return "expected an integer in " + range + ", got '" + text + "'";
        }
        return {};
      },
      range);
}

// A whole decimal number in 0..max (whole_number_in).
inline CLI::Validator whole_number_up_to(long long max) {
  return whole_number_in(0, max);
}

}  // namespace ra::app
