// The AVX-512 path of philox_blocks: 16 counters in the 32-bit lanes of a 512-bit register
// (philox_lanes.h).
#include "rng/philox_batch_detail.h"

#if defined(__x86_64__)
#include <immintrin.h>

// clang ignores GCC's target pragmas; its own pragma gives every function defined in the region
// the same target attribute.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#endif
// GCC 12's AVX-512 intrinsic headers trip its own -Wuninitialized (the "undefined" source
// operand of the masked forms they expand to): a known false positive, silenced here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "rng/philox_lanes.h"

namespace ra::rng::philox_detail {
namespace {

struct Avx512 {
  using T = __m512i;
  static constexpr int kLanes = 16;
  static T load(const std::uint32_t* p) { return _mm512_load_si512(p); }
  static void store(std::uint32_t* p, T v) { _mm512_store_si512(p, v); }
  static T set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static T mul_even(T a, T b) { return _mm512_mul_epu32(a, b); }
  static T shift_down(T a) { return _mm512_srli_epi64(a, 32); }
  static T shift_up(T a) { return _mm512_slli_epi64(a, 32); }
  static T blend_odd(T even, T odd) { return _mm512_mask_blend_epi32(0xAAAA, even, odd); }
  static T xor_(T a, T b) { return _mm512_xor_si512(a, b); }
};
static_assert(Avx512::kLanes == kAvx512Lanes);

}  // namespace

void avx512_groups(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t groups,
                   std::uint32_t* words) {
  philox_lane_groups<Avx512>(key, first, draw, groups, words);
}

}  // namespace ra::rng::philox_detail
#pragma GCC diagnostic pop
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif
