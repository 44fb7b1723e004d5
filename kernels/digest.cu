// Chunk digests: out[c] = XXH3-128 of the c-th 64 KiB chunk of a buffer ('='), one warp per
// chunk, computed by core/xxh3_portable.h (the same code the host test checks against libxxhash).
//
// Why a warp, not a thread, per chunk: a thread walking its chunk alone reads 1,024 stripes of
// 64 bytes one after the other, eight 8-byte loads each, and the 32 threads of a warp read 32
// chunks 64 KiB apart (32 cache lines per load): about 1 ms per launch on an H100 whatever the
// size, which cost ResNet-18's step 1.48x with the PyTorch recorder (docs/history/gpu-results.md).
// In XXH3's long loop lane i of the 8 accumulators takes only words i and i ^ 1 of each stripe, and
// within a 1 KiB block the 16 stripes' terms are sums modulo 2^64: so 8 lanes x 4 groups of
// threads each add 4 stripes of a block (the warp reads 256 contiguous bytes per load), a
// butterfly of two shuffles adds the groups, and each lane scrambles its own accumulator. The
// split is the host's detail::hash_long_by_lanes, tested there against libxxhash. A chunk of at
// most 240 bytes (a tensor's short tail) takes the scalar path on one thread.
//
// Launch shape: 128-thread blocks (4 chunks), grid-stride beyond 65,535 blocks. Every output has
// exactly one writer and the arithmetic is integer: the bits depend on neither launch nor device.
#include "core/integer_math.h"
#include "core/xxh3_lanes.h"
#include "kernels/digest.cuh"

namespace ra::kernels {
namespace {

constexpr int kWarpThreads = 32;
constexpr int kChunksPerBlock = 4;
constexpr int kBlockThreads = kWarpThreads * kChunksPerBlock;
constexpr std::size_t kMaxChunkBlocks = 65535;
constexpr unsigned kFullWarp = 0xffffffffu;

unsigned chunk_blocks(std::size_t chunks) {
  const std::size_t blocks = ra::ceil_div(chunks, kChunksPerBlock);
  return static_cast<unsigned>(blocks < kMaxChunkBlocks ? blocks : kMaxChunkBlocks);
}

// The chunk this thread's warp starts at, and the stride between its chunks.
__device__ __forceinline__ std::size_t warp_first() {
  return (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpThreads;
}
__device__ __forceinline__ std::size_t warp_stride() {
  return static_cast<std::size_t>(blockDim.x) * gridDim.x / kWarpThreads;
}

// The sum over the warp's 4 stripe groups of a lane's terms (threads t, t ^ 8, t ^ 16, t ^ 24).
__device__ __forceinline__ std::uint64_t add_groups(std::uint64_t sum) {
  sum += __shfl_xor_sync(kFullWarp, sum, 8);
  return sum + __shfl_xor_sync(kFullWarp, sum, 16);
}

// XXH3-128 of data[0, len), by the 32 threads of a warp called alike (warp-uniform arguments);
// the result is valid in thread 0 of the warp.
__device__ xxh3::Hash128 warp_xxh3_128(const std::uint8_t* data, std::size_t len) {
  namespace d = xxh3::detail;
  const int thread = static_cast<int>(threadIdx.x % kWarpThreads);
  if (len <= d::kMidSizeMax) {
    xxh3::Hash128 h;
    if (thread == 0) h = xxh3::xxh3_128(data, len);
    return h;
  }
  const int lane = thread & 7, group = thread >> 3;
  std::uint64_t acc = d::initial_accumulator(lane);
  const std::size_t blocks = (len - 1) / d::kBlockBytes;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint64_t sum = add_groups(
        d::group_block_terms(data + b * d::kBlockBytes, d::kStripesPerBlock, lane, group));
    acc = d::scramble_lane(acc + sum, lane);
  }
  const std::size_t stripes = ((len - 1) - d::kBlockBytes * blocks) / d::kStripeBytes;
  acc += add_groups(d::group_block_terms(data + blocks * d::kBlockBytes, stripes, lane, group));
  acc += d::stripe_term(data + len - d::kStripeBytes,
                        d::kSecretBytes - d::kStripeBytes - d::kSecretLastStripeStart, lane);
  std::uint64_t accs[8];
  for (int i = 0; i < 8; ++i) accs[i] = __shfl_sync(kFullWarp, acc, i);  // group 0's lanes
  return d::finish_long(accs, len);
}

// Chunk `chunk` of a buffer of `bytes` bytes, by a warp; written by its thread 0.
__device__ __forceinline__ void digest_chunk(const void* data, std::size_t bytes, std::size_t chunk,
                                             xxh3::Hash128* out) {
  const std::size_t begin = chunk * kDigestChunkBytes;
  const std::size_t rest = bytes - begin;
  const std::size_t length = rest < kDigestChunkBytes ? rest : kDigestChunkBytes;
  const xxh3::Hash128 h = warp_xxh3_128(static_cast<const std::uint8_t*>(data) + begin, length);
  if (threadIdx.x % kWarpThreads == 0) *out = h;
}

__global__ void digest_chunks_kernel(const void* data, std::size_t bytes, std::size_t chunks,
                                     xxh3::Hash128* out) {
  for (std::size_t c = warp_first(); c < chunks; c += warp_stride()) {
    digest_chunk(data, bytes, c, out + c);
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
// Warp-uniform: every thread of the warp finds the same job.
__device__ __forceinline__ void digest_job_chunk(const DigestJob* jobs, int job_count,
                                                 std::size_t c, xxh3::Hash128* out) {
  const int j = find_job(jobs, job_count, c);
  if (j < 0) return;  // before the first job's range
  const DigestJob job = jobs[j];
  const std::size_t local = c - job.first_chunk;
  if (local >= ra::ceil_div(job.bytes, kDigestChunkBytes)) return;
  digest_chunk(job.data, job.bytes, local, out + c);
}

__global__ void digest_chunks_batched_kernel(const DigestJob* jobs, int job_count,
                                             std::size_t total_chunks, xxh3::Hash128* out) {
  for (std::size_t c = warp_first(); c < total_chunks; c += warp_stride()) {
    digest_job_chunk(jobs, job_count, c, out);
  }
}

// The jobs in the parameter space (__grid_constant__: read there, never copied per thread); the
// grid covers chunks [first, end) only.
__global__ void digest_chunks_listed_kernel(const __grid_constant__ DigestJobList list,
                                            std::size_t first, std::size_t end,
                                            xxh3::Hash128* out) {
  for (std::size_t c = first + warp_first(); c < end; c += warp_stride()) {
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
  digest_chunks_kernel<<<chunk_blocks(chunks), kBlockThreads, 0, stream>>>(data, bytes, chunks,
                                                                           out);
}

void digest_chunks_batched(cudaStream_t stream, const DigestJob* jobs_on_device, int jobs,
                           std::size_t total_chunks, xxh3::Hash128* out) {
  if (jobs <= 0 || total_chunks == 0) return;
  digest_chunks_batched_kernel<<<chunk_blocks(total_chunks), kBlockThreads, 0, stream>>>(
      jobs_on_device, jobs, total_chunks, out);
}

void digest_chunks_listed(cudaStream_t stream, const DigestJobList& list, std::size_t total_chunks,
                          xxh3::Hash128* out) {
  if (list.count <= 0 || total_chunks == 0) return;
  const std::size_t first = list.jobs[0].first_chunk;
  if (first >= total_chunks) return;  // only empty jobs
  digest_chunks_listed_kernel<<<chunk_blocks(total_chunks - first), kBlockThreads, 0, stream>>>(
      list, first, total_chunks, out);
}

}  // namespace ra::kernels
