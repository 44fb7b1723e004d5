// Philox4x32-10 over many counters at once. The AVX-512 and AVX2 paths keep 16 or 8 counters in
// the lanes of vector registers; the 32 x 32 -> 64-bit products come from vpmuludq on the even
// lanes and on the odd lanes shifted down, then the high and low halves are blended back. Integer
// arithmetic only: every path gives philox_block's words (tested). The compiler's own vectoriser
// did not manage this loop (GCC 12 left it scalar), hence the intrinsics.
#include "rng/philox_batch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define RA_PHILOX_X86 1
#endif

namespace ra::rng {
namespace {

constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

void scalar_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words) {
  for (std::int64_t i = 0; i < blocks; ++i) {
    const PhiloxBlock block = philox_block(key, first + static_cast<std::uint64_t>(i), draw);
    for (int j = 0; j < 4; ++j) words[4 * i + j] = block.v[j];
  }
}

#ifdef RA_PHILOX_X86

// GCC 12's AVX-512 intrinsic headers trip its own -Wuninitialized (the "undefined" source
// operand of the masked forms they expand to): a known false positive, silenced here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// 16 consecutive blocks from `first`.
__attribute__((target("avx512f"))) void avx512_16(PhiloxKey key, std::uint64_t first,
                                                  std::uint64_t draw, std::uint32_t* words) {
  alignas(64) std::uint32_t lo[16], hi[16];
  for (int l = 0; l < 16; ++l) {
    const std::uint64_t a = first + static_cast<std::uint64_t>(l);
    lo[l] = static_cast<std::uint32_t>(a);
    hi[l] = static_cast<std::uint32_t>(a >> 32);
  }
  __m512i c0 = _mm512_load_si512(lo), c1 = _mm512_load_si512(hi);
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(draw)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(draw >> 32)));
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(kMul0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(kMul1));
  std::uint32_t k0 = key.k0, k1 = key.k1;
  constexpr __mmask16 kOdd = 0xAAAA;
  for (int round = 0; round < 10; ++round) {
    // p = m * c as (hi, lo) per lane: even lanes from mul_epu32(c), odd lanes from c >> 32.
    const __m512i e0 = _mm512_mul_epu32(c0, m0);
    const __m512i o0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), m0);
    const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e0, 32), o0);
    const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, e0, _mm512_slli_epi64(o0, 32));
    const __m512i e1 = _mm512_mul_epu32(c2, m1);
    const __m512i o1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), m1);
    const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(e1, 32), o1);
    const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, e1, _mm512_slli_epi64(o1, 32));
    const __m512i n0 =
        _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    const __m512i n2 =
        _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  alignas(64) std::uint32_t w0[16], w1[16], w2[16], w3[16];
  _mm512_store_si512(w0, c0);
  _mm512_store_si512(w1, c1);
  _mm512_store_si512(w2, c2);
  _mm512_store_si512(w3, c3);
  for (int l = 0; l < 16; ++l) {
    words[4 * l] = w0[l], words[4 * l + 1] = w1[l], words[4 * l + 2] = w2[l],
              words[4 * l + 3] = w3[l];
  }
}

#pragma GCC diagnostic pop

// 8 consecutive blocks from `first`.
__attribute__((target("avx2"))) void avx2_8(PhiloxKey key, std::uint64_t first, std::uint64_t draw,
                                            std::uint32_t* words) {
  alignas(32) std::uint32_t lo[8], hi[8];
  for (int l = 0; l < 8; ++l) {
    const std::uint64_t a = first + static_cast<std::uint64_t>(l);
    lo[l] = static_cast<std::uint32_t>(a);
    hi[l] = static_cast<std::uint32_t>(a >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(draw)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(draw >> 32)));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kMul0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kMul1));
  std::uint32_t k0 = key.k0, k1 = key.k1;
  constexpr int kOdd = 0xAA;
  for (int round = 0; round < 10; ++round) {
    const __m256i e0 = _mm256_mul_epu32(c0, m0);
    const __m256i o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, kOdd);
    const __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), kOdd);
    const __m256i e1 = _mm256_mul_epu32(c2, m1);
    const __m256i o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, kOdd);
    const __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), kOdd);
    const __m256i n0 =
        _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i n2 =
        _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  alignas(32) std::uint32_t w0[8], w1[8], w2[8], w3[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(w0), c0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(w1), c1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(w2), c2);
  _mm256_store_si256(reinterpret_cast<__m256i*>(w3), c3);
  for (int l = 0; l < 8; ++l) {
    words[4 * l] = w0[l], words[4 * l + 1] = w1[l], words[4 * l + 2] = w2[l],
              words[4 * l + 3] = w3[l];
  }
}

enum class Path { scalar, avx2, avx512 };

Path best_path() {
  // __builtin_cpu_supports also checks that the OS saves the wider registers.
  if (__builtin_cpu_supports("avx512f")) return Path::avx512;
  if (__builtin_cpu_supports("avx2")) return Path::avx2;
  return Path::scalar;
}

#endif

}  // namespace

void philox_blocks(PhiloxKey key, std::uint64_t first, std::uint64_t draw, std::int64_t blocks,
                   std::uint32_t* words) {
  std::int64_t i = 0;
#ifdef RA_PHILOX_X86
  static const Path path = best_path();
  if (path == Path::avx512) {
    for (; i + 16 <= blocks; i += 16) avx512_16(key, first + std::uint64_t(i), draw, words + 4 * i);
  } else if (path == Path::avx2) {
    for (; i + 8 <= blocks; i += 8) avx2_8(key, first + std::uint64_t(i), draw, words + 4 * i);
  }
#endif
  scalar_blocks(key, first + static_cast<std::uint64_t>(i), draw, blocks - i, words + 4 * i);
}

}  // namespace ra::rng
