#include "core/digest.h"

#include <xxhash.h>

#include <cstdio>
#include <memory>

#include "core/error.h"

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

Digest128 digest_bytes(DType dtype, const Shape& shape, const void* data, std::size_t bytes) {
  // Header: dtype tag, rank, dims (little-endian int64 as stored on every supported machine).
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> owner(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_state_t* state = owner.get();
  if (state == nullptr) throw RuntimeFailure("out of memory creating an XXH3 state");
  XXH3_128bits_reset(state);
  const std::uint8_t tag = static_cast<std::uint8_t>(dtype);
  const std::uint64_t rank = shape.size();
  XXH3_128bits_update(state, &tag, 1);
  XXH3_128bits_update(state, &rank, sizeof rank);
  XXH3_128bits_update(state, shape.data(), shape.size() * sizeof(std::int64_t));
  XXH3_128bits_update(state, data, bytes);
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  return Digest128{h.high64, h.low64};
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

}  // namespace ra
