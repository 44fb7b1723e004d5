#include "core/digest.h"

#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
// libxxhash's plain entry point is its SSE2 build; its runtime dispatch picks the widest kernel
// the CPU has (AVX-512, AVX2, SSE2): the same hash, with wider vectors for the recorder, which
// hashes every weight, gradient and optimizer state after every step.
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#define RA_XXH3_128 XXH3_128bits_dispatch
#else
#define RA_XXH3_128 XXH3_128bits
#endif

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/integer_math.h"

namespace ra {

std::string Digest128::hex() const {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return text;
}

Digest128 Digest128::from_hex(std::string_view hex) {
  auto parse = [&](std::string_view part) {
    std::uint64_t v = 0;
    for (char ch : part) {
      int d;
      if (ch >= '0' && ch <= '9')
        d = ch - '0';
      else if (ch >= 'a' && ch <= 'f')
        d = ch - 'a' + 10;
      else if (ch >= 'A' && ch <= 'F')
        d = ch - 'A' + 10;
      else
        throw InputError("malformed digest '" + std::string(hex) + "': not hexadecimal");
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    return v;
  };
  if (hex.size() != 32) {
    throw InputError("malformed digest '" + std::string(hex) + "': expected 32 hex digits");
  }
  return Digest128{parse(hex.substr(0, 16)), parse(hex.substr(16))};
}

Digest128 digest_from_chunks(DType dtype, const Shape& shape,
                             std::span<const xxh3::Hash128> chunk_digests) {
  // The message: dtype byte, rank as uint64, dims as int64, then each chunk digest (low64,
  // high64), little-endian as XXH128_hash_t is laid out.
  std::string message;
  message.reserve(1 + 8 + 8 * shape.size() + 16 * chunk_digests.size());
  const std::uint8_t tag = static_cast<std::uint8_t>(dtype);
  const std::uint64_t rank = shape.size();
  message.append(reinterpret_cast<const char*>(&tag), 1);
  message.append(reinterpret_cast<const char*>(&rank), sizeof rank);
  message.append(reinterpret_cast<const char*>(shape.data()), shape.size() * sizeof(std::int64_t));
  for (const xxh3::Hash128& h : chunk_digests) {
    message.append(reinterpret_cast<const char*>(&h.low64), 8);
    message.append(reinterpret_cast<const char*>(&h.high64), 8);
  }
  const XXH128_hash_t h = XXH3_128bits(message.data(), message.size());
  return Digest128{h.high64, h.low64};
}

std::size_t digest_chunk_count(std::size_t bytes) {
  return ceil_div(bytes, kDigestChunkBytes);
}

xxh3::Hash128 digest_chunk(const void* data, std::size_t bytes, std::size_t index) {
  const std::size_t begin = index * kDigestChunkBytes;
  const XXH128_hash_t h = RA_XXH3_128(static_cast<const unsigned char*>(data) + begin,
                                      std::min(kDigestChunkBytes, bytes - begin));
  return xxh3::Hash128{h.low64, h.high64};
}

Digest128 digest_bytes(DType dtype, const Shape& shape, const void* data, std::size_t bytes) {
  // Chunked so that chunks can be hashed in parallel (on a device, one thread per chunk).
  std::vector<xxh3::Hash128> chunks(digest_chunk_count(bytes));
  for (std::size_t c = 0; c < chunks.size(); ++c) chunks[c] = digest_chunk(data, bytes, c);
  return digest_from_chunks(dtype, shape, chunks);
}

Digest128 digest(const Tensor& t) {
  return digest_bytes(DType::f32, t.shape(), t.data(), t.bytes());
}

Digest128 digest(std::span<const std::int32_t> values) {
  return digest_bytes(DType::i32, Shape{static_cast<std::int64_t>(values.size())}, values.data(),
                      values.size_bytes());
}

Digest128 digest(std::span<const std::int64_t> values) {
  return digest_bytes(DType::i64, Shape{static_cast<std::int64_t>(values.size())}, values.data(),
                      values.size_bytes());
}

Digest128 digest(std::span<const Digest128> parts) {
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(parts.size_bytes())}, parts.data(),
                      parts.size_bytes());
}

}  // namespace ra
