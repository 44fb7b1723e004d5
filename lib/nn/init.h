#pragma once
// Weight initializers (Keras semantics), header-only so that they depend on core, rng and the spec
// types only. Every element is a pure function of (stream key, element index, redraw attempt):
// element i never depends on how many elements came before it, on a thread, or on the backend, so
// a tensor initialised on any machine with any thread count has the same bits.
//
// Counter layout (docs/determinism.md, stream `init/<param>`):
//   glorot_uniform  element i <- philox_word(key, i, 0)                      (one 32-bit word)
//   he_normal       element i <- philox_word(key, 2i, b), philox_word(key, 2i+1, b)
//                   (the two words of one Box-Muller pair), b = redraw attempt 0, 1, 2, ...
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "core/tensor.h"
#include "rng/philox.h"
#include "rng/stream.h"
#include "spec/spec.h"

namespace ra::nn {

// The standard deviation of a standard normal truncated to [-2, 2]. Keras >= 2.2.3 (and
// tf.keras) divide the requested stddev by it, so that the values *after* truncation have the
// requested stddev: stddev_before = sqrt(scale / fan) / 0.87962566103423978.
inline constexpr double kTruncatedNormalStddev = 0.87962566103423978;

// A truncated normal redraws a value beyond 2 sigma with probability 4.55%; 64 redraws of one
// element all failing has probability 0.0455^64 ~ 1e-86. Reaching the cap means a broken
// generator, not bad luck.
inline constexpr std::uint64_t kMaxTruncatedNormalAttempts = 64;

// glorot_uniform (Keras GlorotUniform): U[-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)).
// The uniform u in [0, 1) has 24 bits, so 2u - 1 is exact in double; the product with limit is
// rounded to float once.
inline void fill_glorot_uniform(Tensor& t, std::int64_t fan_in, std::int64_t fan_out,
                                rng::PhiloxKey key) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double u = rng::uniform_from_bits(rng::philox_word(key, i, 0));
    t[i] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
}

// One standard normal truncated to [-2, 2] for element i: attempt b uses draw index b, so a
// redraw of element i touches no other element's words.
inline double truncated_standard_normal(rng::PhiloxKey key, std::uint64_t element) {
  for (std::uint64_t attempt = 0; attempt < kMaxTruncatedNormalAttempts; ++attempt) {
    const double z = rng::standard_normal(rng::philox_word(key, 2 * element, attempt),
                                          rng::philox_word(key, 2 * element + 1, attempt));
    if (std::fabs(z) <= 2.0) return z;
  }
  throw std::logic_error("truncated normal: no draw within 2 sigma after 64 attempts");
}

// he_normal (Keras >= 2.2.3 / tf.keras HeNormal = VarianceScaling(2, "fan_in",
// "truncated_normal")): a normal with sigma = sqrt(2 / fan_in) / 0.8796..., values beyond 2 sigma
// redrawn, so the resulting values have stddev sqrt(2 / fan_in) and lie within
// +-2 sigma = +-2.2737 * sqrt(2 / fan_in). (Keras < 2.2.3 used sigma = sqrt(2 / fan_in) itself,
// giving values of stddev 0.88 * sqrt(2 / fan_in).)
inline void fill_he_normal(Tensor& t, std::int64_t fan_in, rng::PhiloxKey key) {
  const double sigma = std::sqrt(2.0 / static_cast<double>(fan_in)) / kTruncatedNormalStddev;
  for (std::size_t i = 0; i < t.size(); ++i) {
    t[i] = static_cast<float>(sigma * truncated_standard_normal(key, i));
  }
}

// Fills `t` from the stream `key` (element i uses Philox draws addressed by i, never by thread).
// fan_in/fan_out as Keras: dense [out,in] -> fan_in=in, fan_out=out; conv [K,C,R,S] ->
// fan_in=C*R*S, fan_out=K*R*S. Throws std::invalid_argument for a non-positive fan the
// initializer needs (a bug in the caller: shapes are validated with the spec).
inline void initialize(Tensor& t, spec::Initializer kind, std::int64_t fan_in, std::int64_t fan_out,
                       rng::PhiloxKey key) {
  switch (kind) {
    case spec::Initializer::zeros:
      t.fill(0.0f);
      return;
    case spec::Initializer::glorot_uniform:
      if (fan_in <= 0 || fan_out <= 0) {
        throw std::invalid_argument("glorot_uniform: fan_in and fan_out must be positive");
      }
      fill_glorot_uniform(t, fan_in, fan_out, key);
      return;
    case spec::Initializer::he_normal:
      if (fan_in <= 0) throw std::invalid_argument("he_normal: fan_in must be positive");
      fill_he_normal(t, fan_in, key);
      return;
  }
  throw std::invalid_argument("initialize: unknown initializer");
}

}  // namespace ra::nn
