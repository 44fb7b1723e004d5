#pragma once
// XXH3-128 (xxHash 0.8 family, default secret, seed 0) as portable scalar code that compiles for
// the host and for CUDA devices, so that a device can hash 64 KiB digest chunks of tensors in
// place (core/digest.h) and get exactly the bits libxxhash's XXH3_128bits gives on the host.
//
// The algorithm is Yann Collet's XXH3 (https://github.com/Cyan4973/xxHash, xxhash.h, BSD-2),
// written here from its specification and reference code, branch by branch:
//   len 0        avalanche of secret words only
//   len 1..3     the bytes and len packed in 32 bits, keyed, XXH64 avalanche   (len_1to3)
//   len 4..8     first/last 4 bytes in 64 bits, one 64x64->128 multiply         (len_4to8)
//   len 9..16    first/last 8 bytes, 128-bit multiply-and-fold                  (len_9to16)
//   len 17..128  1-4 rounds of mix32B over pairs of 16-byte blocks from both ends
//   len 129..240 8 rounds of mix32B on the front, then more from secret offset 3, then the tail
//   len > 240    8 64-bit accumulators over 64-byte stripes; every 16 stripes (1 KiB block, as
//                (192 - 64) / 8 = 16 secret offsets fit in the 192-byte secret) the accumulators
//                are scrambled; the last (possibly overlapping) stripe ends at len; two merges of
//                the accumulators give the low and high words.
// Seed 0 removes every seed term of the reference code (x + seed, x - seed, seed ^ ...); those
// terms are left out rather than carried as zeros.
//
// Device constraints honoured: no library calls, no SIMD, unaligned little-endian reads by bytes
// and shifts (on the device, wider loads where the address is 4- or 8-aligned: the same value,
// CUDA devices being little-endian), RA_HOST_DEVICE on every run-time function, the secret in
// __constant__ memory on the device. C++17: kernels/ compiles as CUDA C++17.
#include <cstddef>
#include <cstdint>

#include "core/host_device.h"

namespace ra::xxh3 {

// The layout of libxxhash's XXH128_hash_t: low word first.
struct Hash128 {
  std::uint64_t low64 = 0;
  std::uint64_t high64 = 0;
};

RA_HOST_DEVICE bool operator==(const Hash128& a, const Hash128& b) {
  return a.low64 == b.low64 && a.high64 == b.high64;
}
RA_HOST_DEVICE bool operator!=(const Hash128& a, const Hash128& b) {
  return !(a == b);
}

namespace detail {

// The default 192-byte secret of XXH3 (kSecret, "pseudorandom secret taken directly from FARSH").
// Kept as 24 little-endian 64-bit words: a secret word at any byte offset is then 1 or 2 loads and
// a funnel of shifts instead of 8 byte loads (the long loop reads 8 secret words per 64-byte
// stripe). The same words and the same funnel serve host and device, so the host test covers the
// code the device runs; the device copy lives in __constant__ memory (a namespace-scope constexpr
// array cannot be indexed at run time from device code), where the constant cache broadcasts the
// one address all threads of a warp read.
inline constexpr std::size_t kSecretBytes = 192;
inline constexpr std::uint8_t kSecretByteList[kSecretBytes] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

// Bytes 8k..8k+7 of the secret as a little-endian word (compile time only).
constexpr std::uint64_t secret_word(std::size_t k) {
  std::uint64_t w = 0;
  for (std::size_t b = 8; b-- > 0;) w = w << 8 | kSecretByteList[8 * k + b];
  return w;
}

#define RA_XXH3_SECRET_WORDS                                                                      \
  secret_word(0), secret_word(1), secret_word(2), secret_word(3), secret_word(4), secret_word(5), \
      secret_word(6), secret_word(7), secret_word(8), secret_word(9), secret_word(10),            \
      secret_word(11), secret_word(12), secret_word(13), secret_word(14), secret_word(15),        \
      secret_word(16), secret_word(17), secret_word(18), secret_word(19), secret_word(20),        \
      secret_word(21), secret_word(22), secret_word(23)
inline constexpr std::size_t kSecretWords = kSecretBytes / 8;
inline constexpr std::uint64_t kHostSecretWords[kSecretWords] = {RA_XXH3_SECRET_WORDS};
#if defined(__CUDACC__)
// static: each translation unit gets its own copy (no relocatable device code needed).
static __constant__ const std::uint64_t kDeviceSecretWords[kSecretWords] = {RA_XXH3_SECRET_WORDS};
#endif
#undef RA_XXH3_SECRET_WORDS

inline constexpr std::uint64_t kPrime32_1 = 0x9E3779B1u;
inline constexpr std::uint64_t kPrime32_2 = 0x85EBCA77u;
inline constexpr std::uint64_t kPrime32_3 = 0xC2B2AE3Du;
inline constexpr std::uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
inline constexpr std::uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr std::uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
inline constexpr std::uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
inline constexpr std::uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;
inline constexpr std::uint64_t kPrimeMx1 = 0x165667919E3779F9ull;  // XXH3_avalanche
inline constexpr std::uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;  // len_4to8

// Long inputs: 64-byte stripes, each consuming 8 more bytes of secret; a block is as many stripes
// as fit the secret, (192 - 64) / 8 = 16, i.e. 1 KiB of input between scrambles.
inline constexpr std::size_t kStripeBytes = 64;
inline constexpr std::size_t kSecretConsumeRate = 8;
inline constexpr std::size_t kStripesPerBlock = (kSecretBytes - kStripeBytes) / kSecretConsumeRate;
inline constexpr std::size_t kBlockBytes = kStripeBytes * kStripesPerBlock;
inline constexpr std::size_t kSecretLastStripeStart = 7;  // odd offsets: secret words differ
inline constexpr std::size_t kSecretMergeStart = 11;      // from those of stripes and scrambles
// 129..240 bytes: rounds after the 8th read the secret from offset 3; the tail at 136 - 17.
inline constexpr std::size_t kMidSizeMax = 240;
inline constexpr std::size_t kMidSizeStartOffset = 3;
inline constexpr std::size_t kMidSizeLastOffset = 17;
inline constexpr std::size_t kSecretSizeMin = 136;

// Little-endian reads of unaligned bytes, the same on any host byte order.
RA_HOST_DEVICE std::uint32_t read_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

RA_HOST_DEVICE std::uint64_t read_le64(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  // Wider loads where the address allows them (the same value: CUDA devices are little-endian).
  // Every stripe of a 64 KiB chunk of a cudaMalloc'ed tensor is 8-aligned; a float tensor at any
  // offset inside a larger allocation is at least 4-aligned. The long loop reads 64 KiB per
  // thread, so eight 1-byte loads per word would dominate it.
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if ((address & 7u) == 0) return *reinterpret_cast<const std::uint64_t*>(p);
  if ((address & 3u) == 0) {
    const auto* words = reinterpret_cast<const std::uint32_t*>(p);
    return static_cast<std::uint64_t>(words[0]) | static_cast<std::uint64_t>(words[1]) << 32;
  }
#endif
  const std::uint64_t low = read_le32(p);
  const std::uint64_t high = read_le32(p + 4);
  return low | high << 32;
}

// Little-endian words of the default secret at a byte offset (offsets need not be aligned; every
// offset XXH3 uses is at most 184 for 8 bytes, inside the 192-byte secret).
RA_HOST_DEVICE std::uint64_t secret64(std::size_t offset) {
#if defined(__CUDA_ARCH__)
  const std::uint64_t* words = kDeviceSecretWords;
#else
  const std::uint64_t* words = kHostSecretWords;
#endif
  const std::size_t word = offset >> 3;
  const unsigned shift = 8u * static_cast<unsigned>(offset & 7u);
  if (shift == 0) return words[word];
  // Bytes offset..offset+7 straddle words `word` and `word + 1` (<= 23: an unaligned offset is
  // at most 177), the low bytes from the first.
  return words[word] >> shift | words[word + 1] << (64u - shift);
}

RA_HOST_DEVICE std::uint32_t secret32(std::size_t offset) {
  // Offsets 0..12 only (len 1..3): reading 8 bytes from there stays inside the secret.
  return static_cast<std::uint32_t>(secret64(offset));
}

RA_HOST_DEVICE std::uint32_t swap32(std::uint32_t x) {
  return (x << 24) | ((x << 8) & 0x00FF0000u) | ((x >> 8) & 0x0000FF00u) | (x >> 24);
}

RA_HOST_DEVICE std::uint64_t swap64(std::uint64_t x) {
  return static_cast<std::uint64_t>(swap32(static_cast<std::uint32_t>(x))) << 32 |
         swap32(static_cast<std::uint32_t>(x >> 32));
}

RA_HOST_DEVICE std::uint32_t rotl32(std::uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

RA_HOST_DEVICE std::uint64_t mult32to64(std::uint64_t a, std::uint64_t b) {
  return (a & 0xFFFFFFFFu) * (b & 0xFFFFFFFFu);
}

// The full 128-bit product from four 32x32->64 products (schoolbook): kept callable on its own so
// the test can check it against the compiler's 128-bit integers on the host.
RA_HOST_DEVICE Hash128 mult64to128_portable(std::uint64_t lhs, std::uint64_t rhs) {
  const std::uint64_t lo_lo = mult32to64(lhs, rhs);
  const std::uint64_t hi_lo = mult32to64(lhs >> 32, rhs);
  const std::uint64_t lo_hi = mult32to64(lhs, rhs >> 32);
  const std::uint64_t hi_hi = mult32to64(lhs >> 32, rhs >> 32);
  // At most (2^32-1) + (2^32-1) + (2^64 - 2^33 + 1) < 2^64: the middle column cannot overflow.
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  Hash128 r;
  r.high64 = (hi_lo >> 32) + (cross >> 32) + hi_hi;
  r.low64 = (cross << 32) | (lo_lo & 0xFFFFFFFFu);
  return r;
}

RA_HOST_DEVICE Hash128 mult64to128(std::uint64_t lhs, std::uint64_t rhs) {
#if defined(__CUDA_ARCH__)
  Hash128 r;
  r.low64 = lhs * rhs;
  r.high64 = __umul64hi(lhs, rhs);
  return r;
#elif defined(__SIZEOF_INT128__)
  __extension__ using U128 =
      unsigned __int128;  // __extension__: not ISO C++, keeps -Wpedantic quiet
  const U128 product = static_cast<U128>(lhs) * rhs;
  Hash128 r;
  r.low64 = static_cast<std::uint64_t>(product);
  r.high64 = static_cast<std::uint64_t>(product >> 64);
  return r;
#else
  return mult64to128_portable(lhs, rhs);
#endif
}

RA_HOST_DEVICE std::uint64_t mul128_fold64(std::uint64_t lhs, std::uint64_t rhs) {
  const Hash128 product = mult64to128(lhs, rhs);
  return product.low64 ^ product.high64;
}

RA_HOST_DEVICE std::uint64_t xorshift64(std::uint64_t v, int shift) {
  return v ^ (v >> shift);
}

// XXH64's avalanche (strong: for inputs not yet mixed).
RA_HOST_DEVICE std::uint64_t xxh64_avalanche(std::uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  h ^= h >> 32;
  return h;
}

// XXH3's fast avalanche (for inputs already partly mixed by multiplies).
RA_HOST_DEVICE std::uint64_t xxh3_avalanche(std::uint64_t h) {
  h = xorshift64(h, 37);
  h *= kPrimeMx1;
  return xorshift64(h, 32);
}

RA_HOST_DEVICE std::uint64_t mix16B(const std::uint8_t* input, std::size_t secret_offset) {
  return mul128_fold64(read_le64(input) ^ secret64(secret_offset),
                       read_le64(input + 8) ^ secret64(secret_offset + 8));
}

// Two 16-byte blocks into both halves of the accumulator; each half also absorbs the other
// block's raw words, which protects against a multiply by zero losing a block.
RA_HOST_DEVICE Hash128 mix32B(Hash128 acc, const std::uint8_t* input_1, const std::uint8_t* input_2,
                              std::size_t secret_offset) {
  acc.low64 += mix16B(input_1, secret_offset);
  acc.low64 ^= read_le64(input_2) + read_le64(input_2 + 8);
  acc.high64 += mix16B(input_2, secret_offset + 16);
  acc.high64 ^= read_le64(input_1) + read_le64(input_1 + 8);
  return acc;
}

RA_HOST_DEVICE Hash128 hash_len_0() {
  Hash128 h;
  h.low64 = xxh64_avalanche(secret64(64) ^ secret64(72));
  h.high64 = xxh64_avalanche(secret64(80) ^ secret64(88));
  return h;
}

RA_HOST_DEVICE Hash128 hash_len_1to3(const std::uint8_t* input, std::size_t len) {
  // len 1: {in[0], 1, in[0], in[0]}; len 2: {in[1], 2, in[0], in[1]}; len 3: {in[2], 3, in[0],
  // in[1]} as bytes 0..3 of a little-endian 32-bit word.
  const std::uint32_t c1 = input[0];
  const std::uint32_t c2 = input[len >> 1];
  const std::uint32_t c3 = input[len - 1];
  const std::uint32_t combined_lo =
      (c1 << 16) | (c2 << 24) | c3 | (static_cast<std::uint32_t>(len) << 8);
  const std::uint32_t combined_hi = rotl32(swap32(combined_lo), 13);
  const std::uint64_t bitflip_lo = secret32(0) ^ secret32(4);
  const std::uint64_t bitflip_hi = secret32(8) ^ secret32(12);
  Hash128 h;
  h.low64 = xxh64_avalanche(combined_lo ^ bitflip_lo);
  h.high64 = xxh64_avalanche(combined_hi ^ bitflip_hi);
  return h;
}

RA_HOST_DEVICE Hash128 hash_len_4to8(const std::uint8_t* input, std::size_t len) {
  const std::uint64_t input_lo = read_le32(input);
  const std::uint64_t input_hi = read_le32(input + len - 4);
  const std::uint64_t input_64 = input_lo + (input_hi << 32);
  const std::uint64_t keyed = input_64 ^ (secret64(16) ^ secret64(24));
  // kPrime64_1 is odd and len << 2 even: the multiplier stays odd, hence invertible mod 2^64.
  Hash128 m = mult64to128(keyed, kPrime64_1 + (static_cast<std::uint64_t>(len) << 2));
  m.high64 += m.low64 << 1;
  m.low64 ^= m.high64 >> 3;
  m.low64 = xorshift64(m.low64, 35);
  m.low64 *= kPrimeMx2;
  m.low64 = xorshift64(m.low64, 28);
  m.high64 = xxh3_avalanche(m.high64);
  return m;
}

RA_HOST_DEVICE Hash128 hash_len_9to16(const std::uint8_t* input, std::size_t len) {
  const std::uint64_t bitflip_lo = secret64(32) ^ secret64(40);
  const std::uint64_t bitflip_hi = secret64(48) ^ secret64(56);
  const std::uint64_t input_lo = read_le64(input);
  std::uint64_t input_hi = read_le64(input + len - 8);
  Hash128 m = mult64to128(input_lo ^ input_hi ^ bitflip_lo, kPrime64_1);
  // len - 1 in bits 54..57: the length reaches both halves through the 128x64 multiply below.
  m.low64 += static_cast<std::uint64_t>(len - 1) << 54;
  input_hi ^= bitflip_hi;
  // m.high64 += (input_hi & 0xFFFFFFFF00000000) + lo32(input_hi) * kPrime32_2, rewritten as in the
  // reference's 64-bit branch (a + b*c == (a + b) + b*(c - 1) with a, b the two halves): the
  // same value modulo 2^64 either way.
  m.high64 += input_hi + mult32to64(input_hi, kPrime32_2 - 1);
  m.low64 ^= swap64(m.high64);
  // 128x64 multiply: h = m * kPrime64_2 (mod 2^128).
  Hash128 h = mult64to128(m.low64, kPrime64_2);
  h.high64 += m.high64 * kPrime64_2;
  h.low64 = xxh3_avalanche(h.low64);
  h.high64 = xxh3_avalanche(h.high64);
  return h;
}

// The common finish of the 17..240 paths.
RA_HOST_DEVICE Hash128 finish_midsize(Hash128 acc, std::size_t len) {
  Hash128 h;
  h.low64 = xxh3_avalanche(acc.low64 + acc.high64);
  h.high64 = acc.low64 * kPrime64_1 + acc.high64 * kPrime64_4 +
             static_cast<std::uint64_t>(len) * kPrime64_2;
  h.high64 = 0 - xxh3_avalanche(h.high64);
  return h;
}

RA_HOST_DEVICE Hash128 hash_len_17to128(const std::uint8_t* input, std::size_t len) {
  Hash128 acc;
  acc.low64 = static_cast<std::uint64_t>(len) * kPrime64_1;
  acc.high64 = 0;
  // Blocks pair from both ends inward: 17..32 bytes one round, 33..64 two, 65..96 three, 97..128
  // four; the pairs overlap when len is not a multiple of 32, which is intended.
  if (len > 32) {
    if (len > 64) {
      if (len > 96) acc = mix32B(acc, input + 48, input + len - 64, 96);
      acc = mix32B(acc, input + 32, input + len - 48, 64);
    }
    acc = mix32B(acc, input + 16, input + len - 32, 32);
  }
  acc = mix32B(acc, input, input + len - 16, 0);
  return finish_midsize(acc, len);
}

RA_HOST_DEVICE Hash128 hash_len_129to240(const std::uint8_t* input, std::size_t len) {
  const int rounds = static_cast<int>(len / 32);  // 4..7
  Hash128 acc;
  acc.low64 = static_cast<std::uint64_t>(len) * kPrime64_1;
  acc.high64 = 0;
  for (int i = 0; i < 4; ++i) {
    acc = mix32B(acc, input + 32 * i, input + 32 * i + 16, static_cast<std::size_t>(32 * i));
  }
  acc.low64 = xxh3_avalanche(acc.low64);
  acc.high64 = xxh3_avalanche(acc.high64);
  for (int i = 4; i < rounds; ++i) {
    acc = mix32B(acc, input + 32 * i, input + 32 * i + 16,
                 kMidSizeStartOffset + static_cast<std::size_t>(32 * (i - 4)));
  }
  // The last 32 bytes, blocks swapped, secret at 136 - 17 - 16 = 103.
  acc = mix32B(acc, input + len - 16, input + len - 32, kSecretSizeMin - kMidSizeLastOffset - 16);
  return finish_midsize(acc, len);
}

// One 64-byte stripe into the 8 accumulators; lanes swap pairwise so each raw word also lands in
// the neighbouring lane (a multiply by zero cannot erase it).
RA_HOST_DEVICE void accumulate_stripe(std::uint64_t acc[8], const std::uint8_t* stripe,
                                      std::size_t secret_offset) {
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t data = read_le64(stripe + 8 * i);
    const std::uint64_t keyed = data ^ secret64(secret_offset + 8 * static_cast<std::size_t>(i));
    acc[i ^ 1] += data;
    acc[i] += mult32to64(keyed, keyed >> 32);
  }
}

// After each 1 KiB block, with the last 64 bytes of the secret.
RA_HOST_DEVICE void scramble(std::uint64_t acc[8]) {
  for (int i = 0; i < 8; ++i) {
    std::uint64_t a = xorshift64(acc[i], 47);
    a ^= secret64(kSecretBytes - kStripeBytes + 8 * static_cast<std::size_t>(i));
    acc[i] = a * kPrime32_1;
  }
}

RA_HOST_DEVICE std::uint64_t merge_accumulators(const std::uint64_t acc[8],
                                                std::size_t secret_offset, std::uint64_t start) {
  std::uint64_t result = start;
  for (int i = 0; i < 4; ++i) {
    const std::size_t s = secret_offset + 16 * static_cast<std::size_t>(i);
    result += mul128_fold64(acc[2 * i] ^ secret64(s), acc[2 * i + 1] ^ secret64(s + 8));
  }
  return xxh3_avalanche(result);
}

// The long hash's two words from its 8 accumulators (shared by the scalar loop below and the
// warp split of core/xxh3_lanes.h).
RA_HOST_DEVICE Hash128 finish_long(const std::uint64_t acc[8], std::size_t len) {
  Hash128 h;
  h.low64 =
      merge_accumulators(acc, kSecretMergeStart, static_cast<std::uint64_t>(len) * kPrime64_1);
  // Secret at 192 - 64 - 11 = 117 for the high word.
  h.high64 = merge_accumulators(acc, kSecretBytes - 64 - kSecretMergeStart,
                                ~(static_cast<std::uint64_t>(len) * kPrime64_2));
  return h;
}

RA_HOST_DEVICE Hash128 hash_long(const std::uint8_t* input, std::size_t len) {
  std::uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                          kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  // Full blocks, each followed by a scramble. (len - 1): a length that is an exact multiple of
  // 1 KiB leaves its last block to the partial-block path, so the final stripe is never empty.
  const std::size_t blocks = (len - 1) / kBlockBytes;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* block = input + b * kBlockBytes;
    for (std::size_t s = 0; s < kStripesPerBlock; ++s) {
      accumulate_stripe(acc, block + s * kStripeBytes, s * kSecretConsumeRate);
    }
    scramble(acc);
  }
  // The whole stripes of the last block, with no scramble after them.
  const std::size_t stripes = ((len - 1) - kBlockBytes * blocks) / kStripeBytes;
  const std::uint8_t* last_block = input + blocks * kBlockBytes;
  for (std::size_t s = 0; s < stripes; ++s) {
    accumulate_stripe(acc, last_block + s * kStripeBytes, s * kSecretConsumeRate);
  }
  // The last 64 bytes of input (overlapping the previous stripe unless len is a multiple of 64),
  // secret at 192 - 64 - 7 = 121.
  accumulate_stripe(acc, input + len - kStripeBytes,
                    kSecretBytes - kStripeBytes - kSecretLastStripeStart);
  return finish_long(acc, len);
}

}  // namespace detail

// XXH3_128bits(data, len) of libxxhash: the default secret, seed 0. data may be unaligned and is
// only read when len > 0.
RA_HOST_DEVICE Hash128 xxh3_128(const void* data, std::size_t len) {
  const auto* input = static_cast<const std::uint8_t*>(data);
  if (len == 0) return detail::hash_len_0();
  if (len <= 3) return detail::hash_len_1to3(input, len);
  if (len <= 8) return detail::hash_len_4to8(input, len);
  if (len <= 16) return detail::hash_len_9to16(input, len);
  if (len <= 128) return detail::hash_len_17to128(input, len);
  if (len <= detail::kMidSizeMax) return detail::hash_len_129to240(input, len);
  return detail::hash_long(input, len);
}

}  // namespace ra::xxh3
