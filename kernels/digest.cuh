#pragma once
// Chunk digests of device memory, bit-identical to the host's (core/digest.h,
// docs/trace-format.md "Digests"): the XXH3-128 (default secret, seed 0) of each consecutive
// 64 KiB chunk of the raw bytes, the last chunk shorter. The caller assembles the tensor digest
// on the host from these 16-byte chunk digests and the dtype/shape header, so a step's weights,
// gradients and optimizer state are digested without copying them to the host (4.8 MB of
// parameters -> 74 chunks -> 1.2 KB copied back).
//
//   digest_chunks          out[c] = xxh3_128(data + c * 64 KiB, min(64 KiB, bytes - c * 64 KiB))
//                          for c in [0, digest_chunk_count(bytes))                           ('=')
//   digest_chunks_batched  the same for many buffers in one launch: job j writes its chunks to
//                          out[first_chunk_j + c]                                            ('=')
//   digest_chunks_listed   the same, the jobs passed in the launch's parameters (no upload)   ('=')
// One thread per chunk, one writer per output, integer arithmetic only: deterministic, and the
// bits do not depend on the launch shape or the device.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/xxh3_portable.h"

namespace ra::kernels {

// Must equal ra::kDigestChunkBytes (core/digest.h is C++20 and kernels compile as C++17; the GPU
// test asserts the two agree).
inline constexpr std::size_t kDigestChunkBytes = 64 * 1024;

// ceil(bytes / 64 KiB); 0 for 0 bytes (an empty tensor's digest has no chunk digests).
std::size_t digest_chunk_count(std::size_t bytes);

// data: device (or managed) memory of `bytes` bytes, any alignment (8-aligned is fastest);
// out: device array of digest_chunk_count(bytes) Hash128. No launch when bytes == 0.
void digest_chunks(cudaStream_t stream, const void* data, std::size_t bytes, xxh3::Hash128* out);

// One buffer of a batched launch. Jobs must be ordered by first_chunk with disjoint output
// ranges: first_chunk[j + 1] >= first_chunk[j] + digest_chunk_count(bytes[j]) (outputs in gaps
// are left untouched). Empty buffers (bytes 0) are allowed and write nothing.
struct DigestJob {
  const void* data;
  std::size_t bytes;
  std::size_t first_chunk;
};

// jobs_on_device: device array of `jobs` DigestJob; total_chunks: an upper bound on the output
// index + 1 (normally first_chunk + chunk count of the last job); out: device array of
// total_chunks Hash128. No launch when jobs or total_chunks is 0.
void digest_chunks_batched(cudaStream_t stream, const DigestJob* jobs_on_device, int jobs,
                           std::size_t total_chunks, xxh3::Hash128* out);

// At most this many jobs travel in one launch's parameters: 128 x 24 bytes + the count = 3,080
// bytes, inside the 4 KiB that every architecture takes as kernel parameters.
inline constexpr int kDigestJobsPerLaunch = 128;

struct DigestJobList {
  int count = 0;  // jobs[0, count) are used
  DigestJob jobs[kDigestJobsPerLaunch];
};

// digest_chunks_batched with the jobs in host memory, copied into the launch's parameters: no
// device memory of the caller's but `out`, and nothing to upload or free (the ctypes library of
// the PyTorch recorder, kernels/digest_abi). Same ordering rules and outputs as the batched
// form. No launch when list.count or total_chunks is 0.
void digest_chunks_listed(cudaStream_t stream, const DigestJobList& list, std::size_t total_chunks,
                          xxh3::Hash128* out);

}  // namespace ra::kernels
