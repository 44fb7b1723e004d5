#include "data/file_bytes.h"

#include <algorithm>

namespace ra::data {
namespace {

// Chunks of 16 MiB; at most 256 MiB reserved before the data has arrived.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;
constexpr std::size_t kMaxUpfrontReserve = std::size_t{256} << 20;

}  // namespace

std::size_t read_chunked(ByteReader& in, std::vector<std::uint8_t>& out, std::size_t want) {
  const std::size_t start = out.size();
  out.reserve(start + std::min(want, kMaxUpfrontReserve));
  std::size_t have = 0;
  while (have < want) {
    const std::size_t chunk = std::min(kChunkBytes, want - have);
    out.resize(start + have + chunk);
    const std::size_t got = in.read(out.data() + start + have, chunk);
    have += got;
    if (got < chunk) break;
  }
  out.resize(start + have);
  return have;
}

bool has_more(ByteReader& in) {
  std::uint8_t extra;
  return in.read(&extra, 1) != 0;
}

}  // namespace ra::data
