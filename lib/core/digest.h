#pragma once
// 128-bit content digests (XXH3-128). A digest covers the dtype, the shape and the raw bytes, so
// two tensors share a digest only if they are bitwise identical (up to a 2^-128 collision chance):
// digests say WHETHER runs differ; snapshots say by how much.
#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"
#include "core/xxh3_portable.h"

namespace ra {

struct Digest128 {
  std::uint64_t high = 0, low = 0;
  friend bool operator==(const Digest128&, const Digest128&) = default;
  std::string hex() const;                          // 32 lowercase hex digits, high word first
  static Digest128 from_hex(std::string_view hex);  // throws InputError on a malformed string
};

enum class DType : std::uint8_t { f32 = 1, i32 = 2, i64 = 3, u8 = 4 };
// Bytes per element.
constexpr std::size_t dtype_bytes(DType t) {
  return t == DType::i64 ? 8 : t == DType::u8 ? 1 : 4;
}

// The digest is chunked (docs/trace-format.md): XXH3-128 over the header and the XXH3-128 of each
// 64 KiB chunk of the bytes, so chunks can be hashed in parallel, on the host or on a device.
inline constexpr std::size_t kDigestChunkBytes = 64 * 1024;

Digest128 digest_bytes(DType dtype, const Shape& shape, const void* data, std::size_t bytes);
// Number of chunks of `bytes`, and the XXH3-128 of chunk `index` (for digests hashed in parallel).
std::size_t digest_chunk_count(std::size_t bytes);
xxh3::Hash128 digest_chunk(const void* data, std::size_t bytes, std::size_t index);
// The same digest from chunk digests computed elsewhere (on a device: kernels/digest.cuh), in
// chunk order; chunk_digests.size() must be ceil(bytes / kDigestChunkBytes).
Digest128 digest_from_chunks(DType dtype, const Shape& shape,
                             std::span<const xxh3::Hash128> chunk_digests);
Digest128 digest(const Tensor& t);
Digest128 digest(std::span<const std::int32_t> values);
Digest128 digest(std::span<const std::int64_t> values);
// One digest over several: XXH3-128 of the concatenated digests (as u8 bytes), as the optimizer
// state's digest in a trace and the resume state's are taken.
Digest128 digest(std::span<const Digest128> parts);

}  // namespace ra
