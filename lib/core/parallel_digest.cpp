#include "core/parallel_digest.h"

#include <span>

namespace ra {

std::vector<Digest128> digest_in_parallel(ThreadPool& pool,
                                          const std::vector<DigestInput>& inputs) {
  // first[i]: the index of input i's first chunk among all chunks; owner[c]: the input of chunk c.
  std::vector<std::size_t> first(inputs.size() + 1, 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    first[i + 1] = first[i] + digest_chunk_count(inputs[i].bytes);
  }
  std::vector<xxh3::Hash128> chunks(first.back());
  std::vector<std::size_t> owner(first.back());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t c = first[i]; c < first[i + 1]; ++c) owner[c] = i;
  }
  pool.parallel_for(static_cast<std::int64_t>(chunks.size()), [&](std::int64_t c, int) {
    const DigestInput& in = inputs[owner[c]];
    chunks[c] = digest_chunk(in.data, in.bytes, static_cast<std::size_t>(c) - first[owner[c]]);
  });
  std::vector<Digest128> out;
  out.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out.push_back(digest_from_chunks(
        inputs[i].dtype, inputs[i].shape,
        std::span<const xxh3::Hash128>(chunks.data() + first[i], first[i + 1] - first[i])));
  }
  return out;
}

}  // namespace ra
