// The AVX2 path of philox_blocks: 8 counters in the 32-bit lanes of a 256-bit register
// (philox_lanes.h).
#include "rng/philox_batch_detail.h"

#if defined(__x86_64__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#include "rng/philox_lanes.h"

namespace ra::rng::philox_detail {
namespace {

struct Avx2 {
  using T = __m256i;
  static constexpr int kLanes = 8;
  static T load(const std::uint32_t* p) { return _mm256_load_si256(reinterpret_cast<const T*>(p)); }
  static void store(std::uint32_t* p, T v) { _mm256_store_si256(reinterpret_cast<T*>(p), v); }
  static T set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static T mul_even(T a, T b) { return _mm256_mul_epu32(a, b); }
  static T shift_down(T a) { return _mm256_srli_epi64(a, 32); }
  static T shift_up(T a) { return _mm256_slli_epi64(a, 32); }
  static T blend_odd(T even, T odd) { return _mm256_blend_epi32(even, odd, 0xAA); }
  static T xor_(T a, T b) { return _mm256_xor_si256(a, b); }
};
static_assert(Avx2::kLanes == kAvx2Lanes);

}  // namespace

void avx2_groups(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t groups,
                 std::uint32_t* words) {
  philox_lane_groups<Avx2>(key, first, draw, groups, words);
}

}  // namespace ra::rng::philox_detail
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif
