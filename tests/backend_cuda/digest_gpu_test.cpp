// Chunk digests computed on the device (kernels/digest.cuh) against the host: every chunk digest
// equals libxxhash's XXH3_128bits of the same 64 KiB chunk, and the tensor digest assembled from
// the device's chunk digests (docs/trace-format.md "Digests") equals ra::digest of the tensor.
// Sizes cover 0 bytes, the short and mid-size XXH3 paths, one chunk +-1 and several chunks with a
// short tail; pointers 8-aligned, 4-aligned and odd (the kernel's three load paths). Every case
// needs a device: tagged [gpu], each skips with the reason when no usable GPU is present.
#include <cuda_runtime_api.h>
#include <xxhash.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>
#include "backend_cuda/gpu_test_support.h"

#include "core/digest.h"
#include "core/tensor.h"
#include "kernels/digest.cuh"

namespace {

using ra::xxh3::Hash128;
namespace kernels = ra::kernels;

static_assert(kernels::kDigestChunkBytes == ra::kDigestChunkBytes,
              "the device chunk size must be the host digest's");
static_assert(sizeof(Hash128) == 16 && sizeof(XXH128_hash_t) == 16,
              "chunk digests are 16 bytes, low word first, on both sides");

// Device bytes, freed on scope exit; filled with 0xA5 so an unwritten output shows up. Fills and
// copies are queued on the test's stream (gpu_test_support.h says why).
class DeviceBytes {
 public:
  DeviceBytes(const gpu_test::Stream& stream, std::size_t bytes) : stream_(stream), bytes_(bytes) {
    RA_TEST_CUDA(cudaMalloc(&data_, bytes == 0 ? 1 : bytes));
    stream_.fill_bytes(data_, 0xA5, bytes == 0 ? 1 : bytes);
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  unsigned char* get() const { return static_cast<unsigned char*>(data_); }
  void upload(std::size_t offset, const void* host, std::size_t bytes) {
    REQUIRE(offset + bytes <= bytes_);
    stream_.upload(get() + offset, host, bytes);
  }
  // Waits for the stream: the kernels queued before have finished.
  std::vector<Hash128> download_hashes(std::size_t count) const {
    REQUIRE(count * sizeof(Hash128) <= bytes_);
    std::vector<Hash128> hashes(count);
    stream_.download(hashes.data(), data_, count * sizeof(Hash128));
    return hashes;
  }

 private:
  const gpu_test::Stream& stream_;
  void* data_ = nullptr;
  std::size_t bytes_;
};

std::vector<unsigned char> random_bytes(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<unsigned char> bytes(count);
  for (auto& b : bytes) b = static_cast<unsigned char>(engine() >> 56);
  return bytes;
}

// The host's chunk digests, straight from libxxhash (the definition, not ra::digest's code).
std::vector<Hash128> host_chunk_digests(const unsigned char* data, std::size_t bytes) {
  std::vector<Hash128> hashes;
  for (std::size_t begin = 0; begin < bytes; begin += ra::kDigestChunkBytes) {
    const std::size_t length = std::min(ra::kDigestChunkBytes, bytes - begin);
    const XXH128_hash_t h = XXH3_128bits(data + begin, length);
    hashes.push_back(Hash128{h.low64, h.high64});
  }
  return hashes;
}

// docs/trace-format.md: XXH3-128 of [dtype byte, rank uint64, dims int64..., chunk digests (low
// word, high word)], all little-endian, as the host assembles it.
ra::Digest128 assemble_f32_digest(const ra::Shape& shape, const std::vector<Hash128>& chunks) {
  std::string message;
  auto append = [&](const void* p, std::size_t n) {
    message.append(static_cast<const char*>(p), n);
  };
  const std::uint8_t dtype = static_cast<std::uint8_t>(ra::DType::f32);
  const std::uint64_t rank = shape.size();
  append(&dtype, 1);
  append(&rank, sizeof rank);
  for (std::int64_t d : shape) append(&d, sizeof d);
  for (const Hash128& h : chunks) {
    append(&h.low64, 8);
    append(&h.high64, 8);
  }
  const XXH128_hash_t h = XXH3_128bits(message.data(), message.size());
  return ra::Digest128{h.high64, h.low64};
}

void require_equal_chunks(const std::vector<Hash128>& device, const std::vector<Hash128>& host) {
  REQUIRE(device.size() == host.size());
  for (std::size_t c = 0; c < host.size(); ++c) {
    INFO("chunk " << c << " of " << host.size());
    REQUIRE(device[c].low64 == host[c].low64);
    REQUIRE(device[c].high64 == host[c].high64);
  }
}

}  // namespace

TEST_CASE("digest_chunk_count is ceil(bytes / 64 KiB)", "[digest]") {
  // Host-only arithmetic (no device needed), though it lives in the kernels library: 0 chunks for 0
  // bytes, then one more chunk at every 64 KiB boundary crossed.
  CHECK(kernels::digest_chunk_count(0) == 0);
  CHECK(kernels::digest_chunk_count(1) == 1);
  CHECK(kernels::digest_chunk_count(65536) == 1);
  CHECK(kernels::digest_chunk_count(65537) == 2);
  CHECK(kernels::digest_chunk_count(3 * 65536 + 123) == 4);
}

TEST_CASE("device chunk digests equal libxxhash's, aligned and unaligned", "[gpu][digest]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const std::size_t sizes[] = {0,        1,   3,    8,    16,    100,   128,   200,
                               240,      241, 1024, 1025, 65535, 65536, 65537, 3 * 65536 + 123,
                               8 * 65536};
  const auto source = random_bytes(8 * 65536 + 8, 4242);
  for (std::size_t offset : {0, 4, 1}) {  // 8-aligned, 4-aligned, odd: the three load paths
    for (std::size_t bytes : sizes) {
      INFO("bytes " << bytes << ", offset " << offset);
      DeviceBytes input(stream, offset + bytes);
      input.upload(offset, source.data(), bytes);
      const std::size_t chunks = kernels::digest_chunk_count(bytes);
      DeviceBytes output(stream, chunks * sizeof(Hash128));
      kernels::digest_chunks(stream.get(), input.get() + offset, bytes,
                             reinterpret_cast<Hash128*>(output.get()));
      stream.finish();
      require_equal_chunks(output.download_hashes(chunks),
                           host_chunk_digests(source.data(), bytes));
    }
  }
}

TEST_CASE("a digest assembled from device chunk digests equals ra::digest", "[gpu][digest]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  // [3, 5, 70, 41]: 43,050 floats = 172,200 bytes = 2 full chunks and a 41,128-byte tail.
  const ra::Shape shape{3, 5, 70, 41};
  ra::Tensor tensor(shape, 0.0f);
  std::mt19937 engine(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : tensor) v = uniform(engine);
  tensor[0] = -0.0f;  // digests are bitwise: -0.0 must survive the trip

  DeviceBytes input(stream, tensor.bytes());
  input.upload(0, tensor.data(), tensor.bytes());
  const std::size_t chunks = kernels::digest_chunk_count(tensor.bytes());
  REQUIRE(chunks == 3);
  DeviceBytes output(stream, chunks * sizeof(Hash128));
  kernels::digest_chunks(stream.get(), input.get(), tensor.bytes(),
                         reinterpret_cast<Hash128*>(output.get()));
  stream.finish();
  CHECK(assemble_f32_digest(shape, output.download_hashes(chunks)) == ra::digest(tensor));
}

TEST_CASE("batched chunk digests of many buffers equal libxxhash's", "[gpu][digest]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  // Like a model's parameters: big and small tensors, an empty one, odd sizes; plus a gap of 2
  // output slots before the last job that the kernel must leave untouched.
  const std::size_t sizes[] = {4 * 9 * 32, 0, 4 * 32, 5 * 65536 + 4, 4 * 128 * 10, 65536, 1};
  const auto source = random_bytes(6 * 65536, 77);
  std::vector<std::unique_ptr<DeviceBytes>> buffers;
  std::vector<kernels::DigestJob> jobs;
  std::vector<Hash128> expected;
  const std::size_t gap_before_last = 2;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    const std::size_t bytes = sizes[i];
    buffers.push_back(std::make_unique<DeviceBytes>(stream, bytes));
    buffers.back()->upload(0, source.data() + i, bytes);  // a different window per buffer
    if (i + 1 == std::size(sizes)) expected.resize(expected.size() + gap_before_last);
    jobs.push_back({buffers.back()->get(), bytes, expected.size()});
    const auto hashes = host_chunk_digests(source.data() + i, bytes);
    expected.insert(expected.end(), hashes.begin(), hashes.end());
  }
  const std::size_t total_chunks = expected.size();

  DeviceBytes jobs_on_device(stream, jobs.size() * sizeof(kernels::DigestJob));
  jobs_on_device.upload(0, jobs.data(), jobs.size() * sizeof(kernels::DigestJob));
  DeviceBytes output(stream, total_chunks * sizeof(Hash128));  // 0xA5 bytes everywhere
  kernels::digest_chunks_batched(
      stream.get(), reinterpret_cast<const kernels::DigestJob*>(jobs_on_device.get()),
      static_cast<int>(jobs.size()), total_chunks, reinterpret_cast<Hash128*>(output.get()));
  stream.finish();

  auto device = output.download_hashes(total_chunks);
  // The gap slots keep the fill pattern; then compare everything else.
  const std::size_t gap_first = jobs.back().first_chunk - gap_before_last;
  const Hash128 fill{0xA5A5A5A5A5A5A5A5ull, 0xA5A5A5A5A5A5A5A5ull};
  for (std::size_t c = gap_first; c < gap_first + gap_before_last; ++c) {
    INFO("gap slot " << c);
    CHECK(device[c] == fill);
    device[c] = expected[c];
  }
  require_equal_chunks(device, expected);
}
