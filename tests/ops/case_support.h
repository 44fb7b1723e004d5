#pragma once
// Helpers of the op table's families (*_cases.cpp): seeded inputs, expectations from reference
// outputs, and the families' entry points, which op_table.cpp concatenates into the one table.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/op_case.h"
#include "rng/philox.h"

namespace ops_test {

// Values in [lo, hi) from Philox: the same on every platform (unlike <random> distributions).
inline std::vector<float> random_values(std::int64_t count, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(count));
  const ra::rng::PhiloxKey key{seed, 0x0B5EEDu};
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = lo + (hi - lo) * ra::rng::uniform_from_bits(ra::rng::philox_word(key, i, 0));
  }
  return v;
}

// Values from {-1, 0, 1}: max-pool windows full of ties, to pin the tie rule.
inline std::vector<float> tied_values(std::int64_t count, std::uint32_t seed) {
  std::vector<float> v = random_values(count, seed, -1.5f, 1.5f);
  for (float& x : v) x = std::round(x);
  return v;
}

inline std::vector<float> nan_values(std::int64_t count) {
  return std::vector<float>(static_cast<std::size_t>(count),
                            std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<float> abs_of(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

inline std::vector<float> relu_of(std::vector<float> v) {
  for (float& x : v) x = x > 0.0f ? x : 0.0f;
  return v;
}

// Within units * u * scale (+ atol) of value (op_case.h).
inline FloatExpectation within(const std::vector<float>& value, const std::vector<float>& scale,
                               double units, double atol = 0) {
  return {std::vector<double>(value.begin(), value.end()),
          std::vector<double>(scale.begin(), scale.end()), units, atol};
}

// Exactly value.
inline FloatExpectation exactly(const std::vector<float>& value) {
  return {std::vector<double>(value.begin(), value.end()), std::vector<double>(value.size(), 0.0),
          0, 0};
}

// The families of the table, each appending its cases.
void add_conv_cases(std::vector<OpCase>& table);
void add_conv_pool_cases(std::vector<OpCase>& table);
void add_dense_cases(std::vector<OpCase>& table);
void add_pool_cases(std::vector<OpCase>& table);
void add_channel_cases(std::vector<OpCase>& table);
void add_elementwise_cases(std::vector<OpCase>& table);
void add_loss_cases(std::vector<OpCase>& table);
void add_optimizer_cases(std::vector<OpCase>& table);
void add_digest_cases(std::vector<OpCase>& table);

}  // namespace ops_test
