// Chunk digests: out[c] = XXH3-128 of the c-th 64 KiB chunk of a buffer ('='), one thread per
// chunk, computed by core/xxh3_portable.h (the same code the host test checks against libxxhash).
//
// Launch shape: 32-thread blocks, one chunk per thread, grid-stride beyond 65,535 blocks. The work
// is latency-bound, not bandwidth-bound: a thread walks its chunk as 1,024 dependent 64-byte
// stripes, each waiting for its loads, so a chunk's time is about 1,024 memory latencies in a row
// whatever else runs, and one thread per chunk reads far below the memory bandwidth; what shortens
// the pass is more chunks in flight at once. Small blocks spread the chunks of a typical model
// (tens to hundreds) over many SMs instead of piling them into one 256-thread block, which would
// share one SM's L1 and load/store units.
// The bits do not depend on the launch shape: every output has exactly one writer.
#include "core/integer_math.h"
#include "kernels/digest.cuh"

namespace ra::kernels {
namespace {

constexpr int kChunkThreads = 32;
constexpr std::size_t kMaxChunkBlocks = 65535;

unsigned chunk_blocks(std::size_t chunks) {
  const std::size_t blocks = ra::ceil_div(chunks, kChunkThreads);
  return static_cast<unsigned>(blocks < kMaxChunkBlocks ? blocks : kMaxChunkBlocks);
}

__device__ __forceinline__ std::size_t chunk_first() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::size_t chunk_stride() {
  return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

__device__ __forceinline__ xxh3::Hash128 hash_chunk(const void* data, std::size_t bytes,
                                                    std::size_t chunk) {
  const std::size_t begin = chunk * kDigestChunkBytes;
  const std::size_t rest = bytes - begin;
  const std::size_t length = rest < kDigestChunkBytes ? rest : kDigestChunkBytes;
  return xxh3::xxh3_128(static_cast<const unsigned char*>(data) + begin, length);
}

__global__ void digest_chunks_kernel(const void* data, std::size_t bytes, std::size_t chunks,
                                     xxh3::Hash128* out) {
  for (std::size_t c = chunk_first(); c < chunks; c += chunk_stride()) {
    out[c] = hash_chunk(data, bytes, c);
  }
}

// The job whose output range may hold chunk index c: the last job with first_chunk <= c (binary
// search, jobs ordered by first_chunk); -1 if none.
__device__ int find_job(const DigestJob* jobs, int job_count, std::size_t c) {
  int lo = 0, hi = job_count;  // answer in [lo - 1, hi - 1]
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (jobs[mid].first_chunk <= c) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo - 1;
}

// Chunk c of the jobs' outputs, when a job owns it ('='; gaps and empty jobs are left untouched).
__device__ __forceinline__ void digest_job_chunk(const DigestJob* jobs, int job_count,
                                                 std::size_t c, xxh3::Hash128* out) {
  const int j = find_job(jobs, job_count, c);
  if (j < 0) return;  // before the first job's range
  const DigestJob job = jobs[j];
  const std::size_t local = c - job.first_chunk;
  if (local >= ra::ceil_div(job.bytes, kDigestChunkBytes)) return;
  out[c] = hash_chunk(job.data, job.bytes, local);
}

__global__ void digest_chunks_batched_kernel(const DigestJob* jobs, int job_count,
                                             std::size_t total_chunks, xxh3::Hash128* out) {
  for (std::size_t c = chunk_first(); c < total_chunks; c += chunk_stride()) {
    digest_job_chunk(jobs, job_count, c, out);
  }
}

// The jobs in the parameter space (__grid_constant__: read there, never copied per thread).
__global__ void digest_chunks_listed_kernel(const __grid_constant__ DigestJobList list,
                                            std::size_t total_chunks, xxh3::Hash128* out) {
  for (std::size_t c = chunk_first(); c < total_chunks; c += chunk_stride()) {
    digest_job_chunk(list.jobs, list.count, c, out);
  }
}

}  // namespace

std::size_t digest_chunk_count(std::size_t bytes) {
  return ra::ceil_div(bytes, kDigestChunkBytes);
}

void digest_chunks(cudaStream_t stream, const void* data, std::size_t bytes, xxh3::Hash128* out) {
  const std::size_t chunks = digest_chunk_count(bytes);
  if (chunks == 0) return;  // a grid of 0 blocks is a launch error
  digest_chunks_kernel<<<chunk_blocks(chunks), kChunkThreads, 0, stream>>>(data, bytes, chunks,
                                                                           out);
}

void digest_chunks_batched(cudaStream_t stream, const DigestJob* jobs_on_device, int jobs,
                           std::size_t total_chunks, xxh3::Hash128* out) {
  if (jobs <= 0 || total_chunks == 0) return;
  digest_chunks_batched_kernel<<<chunk_blocks(total_chunks), kChunkThreads, 0, stream>>>(
      jobs_on_device, jobs, total_chunks, out);
}

void digest_chunks_listed(cudaStream_t stream, const DigestJobList& list, std::size_t total_chunks,
                          xxh3::Hash128* out) {
  if (list.count <= 0 || total_chunks == 0) return;
  digest_chunks_listed_kernel<<<chunk_blocks(total_chunks), kChunkThreads, 0, stream>>>(
      list, total_chunks, out);
}

}  // namespace ra::kernels
