// The C ABI of device_digest.h over kernels/digest.cuh: the jobs are checked whole, then cut into
// launches of at most kDigestJobsPerLaunch jobs, each job's chunks written where the caller put
// them. Nothing is allocated and nothing waits.
#include "kernels/digest.cuh"
#include "kernels/digest_abi/device_digest.h"

namespace {

using ra::kernels::digest_chunk_count;
using ra::kernels::DigestJob;
using ra::kernels::DigestJobList;
using ra::kernels::kDigestJobsPerLaunch;

static_assert(sizeof(ra_digest_job) == 24 && sizeof(DigestJob) == 24,
              "the job layout is the ABI: Python packs it as <QQQ");
static_assert(sizeof(ra::xxh3::Hash128) == 16, "16 bytes a chunk digest: low, then high word");

constexpr int kBadJobs = -1;

// The ordering rules of device_digest.h: each job's output range inside [0, out_chunks), after
// the previous one's.
bool jobs_are_valid(const ra_digest_job* jobs, int count, std::uint64_t out_chunks) {
  std::uint64_t next_free = 0;
  for (int j = 0; j < count; ++j) {
    const std::uint64_t chunks = digest_chunk_count(jobs[j].bytes);
    if (jobs[j].first_chunk < next_free || jobs[j].first_chunk > out_chunks ||
        chunks > out_chunks - jobs[j].first_chunk || (chunks > 0 && jobs[j].data == nullptr)) {
      return false;
    }
    next_free = jobs[j].first_chunk + chunks;
  }
  return true;
}

}  // namespace

extern "C" int ra_device_digest_abi_version(void) {
  return RA_DEVICE_DIGEST_ABI_VERSION;
}

extern "C" uint64_t ra_device_digest_chunk_bytes(void) {
  return ra::kernels::kDigestChunkBytes;
}

extern "C" int ra_device_digest_enqueue(const ra_digest_job* jobs, int count, void* out,
                                        uint64_t out_chunks, void* stream) {
  if (count < 0 || (count > 0 && (jobs == nullptr || out == nullptr))) return kBadJobs;
  if (!jobs_are_valid(jobs, count, out_chunks)) return kBadJobs;
  auto* digests = static_cast<ra::xxh3::Hash128*>(out);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  for (int begin = 0; begin < count; begin += kDigestJobsPerLaunch) {
    DigestJobList list;
    list.count = count - begin < kDigestJobsPerLaunch ? count - begin : kDigestJobsPerLaunch;
    for (int j = 0; j < list.count; ++j) {
      const ra_digest_job& job = jobs[begin + j];
      list.jobs[j] = DigestJob{job.data, job.bytes, job.first_chunk};
    }
    // One past this launch's last chunk: the launch's grid covers its own jobs only.
    const ra_digest_job& last = jobs[begin + list.count - 1];
    const std::uint64_t end = last.first_chunk + digest_chunk_count(last.bytes);
    ra::kernels::digest_chunks_listed(cuda_stream, list, end, digests);
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) return static_cast<int>(error);
  }
  return 0;
}

extern "C" const char* ra_device_digest_error_text(int code) {
  if (code == 0) return "no error";
  if (code == kBadJobs) {
    return "digest jobs out of order, overlapping, without data or past the output";
  }
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
