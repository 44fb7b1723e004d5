#pragma once
// The instruction-set paths behind philox_blocks (philox_batch.h), internal to lib/rng and its
// tests. philox_blocks takes the widest path the CPU has, so on an AVX-512 host the AVX2 path
// would never run in a test; the tests call philox_blocks_on for every supported path instead.
#include <cstdint>

#include "rng/philox.h"

namespace ra::rng::philox_detail {

enum class PhiloxPath { scalar, avx2, avx512 };

inline constexpr PhiloxPath kAllPhiloxPaths[] = {PhiloxPath::scalar, PhiloxPath::avx2,
                                                 PhiloxPath::avx512};

const char* philox_path_name(PhiloxPath path);

// Whether this build and this CPU (and its OS, which must save the wider registers) can run path.
bool philox_path_supported(PhiloxPath path);

// The path philox_blocks takes: the widest supported one.
PhiloxPath best_philox_path();

// philox_blocks on the given path (whole vector groups there, the remaining blocks scalar).
// Throws RuntimeFailure for a path that philox_path_supported rejects.
void philox_blocks_on(PhiloxPath path, PhiloxKey key, std::uint64_t first, std::uint64_t draw,
                      std::int64_t blocks, std::uint32_t* words);

// The vector paths, x86 builds only (philox_batch_avx2.cpp, philox_batch_avx512.cpp): the words
// of `groups` * 8 (AVX2) or * 16 (AVX-512) consecutive blocks from `first`.
inline constexpr std::int64_t kAvx2Lanes = 8, kAvx512Lanes = 16;
void avx2_groups(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t groups,
                 std::uint32_t* words);
void avx512_groups(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t groups,
                   std::uint32_t* words);

}  // namespace ra::rng::philox_detail
