// digest_in_parallel hashes the chunks of many buffers on a pool: its digests must be those of
// digest_bytes, buffer by buffer, for empty, one-chunk and many-chunk buffers of every dtype.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/parallel_digest.h"

TEST_CASE("parallel digests are digest_bytes of each buffer", "[core][digest]") {
  std::vector<std::uint8_t> big(3 * ra::kDigestChunkBytes + 1234), small(100), empty;
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 31 + 7);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<std::uint8_t>(i);
  const std::vector<ra::DigestInput> inputs = {
      {ra::DType::f32, ra::Shape{static_cast<std::int64_t>(big.size() / 4)}, big.data(),
       big.size() / 4 * 4},
      {ra::DType::u8, ra::Shape{100}, small.data(), small.size()},
      {ra::DType::i32, ra::Shape{5, 5}, small.data(), small.size()},
      {ra::DType::f32, ra::Shape{0}, empty.data(), 0},
  };
  for (int threads : {1, 3}) {
    ra::ThreadPool pool(threads);
    const std::vector<ra::Digest128> d = ra::digest_in_parallel(pool, inputs);
    REQUIRE(d.size() == inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      INFO("input " << i << ", " << threads << " threads");
      CHECK(d[i] ==
            ra::digest_bytes(inputs[i].dtype, inputs[i].shape, inputs[i].data, inputs[i].bytes));
    }
  }
  // The shape is part of the digest: the same bytes as [25] and as [5, 5] differ.
  CHECK(ra::digest_bytes(ra::DType::i32, ra::Shape{25}, small.data(), 100) !=
        ra::digest_bytes(ra::DType::i32, ra::Shape{5, 5}, small.data(), 100));
}
