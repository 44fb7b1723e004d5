#pragma once
// Named random streams. Every consumer of randomness (initializer of one layer, data order,
// dropout of one layer, synthetic data) draws from its own Philox key, derived from the run's
// seed and the stream's name, so no stream can disturb another and an audit can vary one source
// (its seed) while pinning the others.
#include <cstdint>
#include <string>
#include <string_view>

#include "rng/philox.h"

namespace ra::rng {

// Stable across versions and machines: XXH3-64 of the name, seeded with the seed. Changing this
// changes every draw of every run, so it is part of the trace format's contract.
PhiloxKey derive_key(std::uint64_t seed, std::string_view stream_name);

// Well-known stream names (documented in docs/determinism.md).
std::string init_stream(std::string_view layer_name);     // "init/<layer>"
std::string dropout_stream(std::string_view layer_name);  // "dropout/<layer>"
inline constexpr std::string_view kDataOrderStream = "data/order";
inline constexpr std::string_view kSyntheticDataStream = "data/synthetic";
inline constexpr std::string_view kDataAugmentStream = "data/augment";

// Uniform integer in [0, bound) from 64 random bits (multiply-shift; bias below 2^-32 for any
// bound used here, and exactly reproducible).
std::uint64_t uniform_below(std::uint64_t random64, std::uint64_t bound);

// Standard normal from two words by Box-Muller, in double then rounded to float. Uses libm
// (log, cos), so it is computed on the host only; devices receive the resulting values.
float standard_normal(std::uint32_t w0, std::uint32_t w1);

}  // namespace ra::rng
