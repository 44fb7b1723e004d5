/* The device digests of the PyTorch recorder: a C ABI over kernels/digest.cuh that Python loads
 * with ctypes (lib/python/repro_audit/device_digest.py), so that a CUDA tensor is digested where
 * it lives, by the same kernel and definition as the engine's (docs/trace-format.md "Digests"),
 * with no copy to the host: a step's 140 MB of ResNet-18 weights, gradients and momentum become
 * about 2,200 chunk digests, 35 KB.
 *
 * The library owns nothing: no device memory, no stream, no state between calls. The caller
 * (PyTorch's allocator, PyTorch's current stream) owns every pointer, and keeps each buffer alive
 * and unwritten until the stream has run the queued work. Built by CMake as
 * libra_device_digest.so with the CUDA runtime linked statically: it needs only the driver. */
#ifndef RA_DEVICE_DIGEST_H
#define RA_DEVICE_DIGEST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the functions or the job layout below; the Python side checks it. */
#define RA_DEVICE_DIGEST_ABI_VERSION 1

/* One buffer: its chunk digests go to out[first_chunk + c], c < ceil(bytes / chunk bytes).
 * 24 bytes, no padding: Python packs it as "<QQQ". */
typedef struct ra_digest_job {
  const void* data;     /* device memory */
  uint64_t bytes;       /* 0 writes nothing */
  uint64_t first_chunk; /* jobs ordered by first_chunk, output ranges disjoint */
} ra_digest_job;

int ra_device_digest_abi_version(void);
/* 65,536: the chunk the digest definition cuts bytes into. */
uint64_t ra_device_digest_chunk_bytes(void);

/* Queues on `stream` (a cudaStream_t; 0 is the legacy default stream) the XXH3-128 of every
 * 64 KiB chunk of each job's bytes into `out` (device memory, 16 bytes a chunk: low word, then
 * high word, little-endian), `out_chunks` chunks long. Jobs are read from host memory during the
 * call (they travel in the launches' parameters). Returns 0, or the CUDA error code of a launch
 * that failed (ra_device_digest_error_text names it), or -1 for jobs that break the rules above
 * (unordered, overlapping, past out_chunks; nothing is launched then). Does not wait. */
int ra_device_digest_enqueue(const ra_digest_job* jobs, int count, void* out, uint64_t out_chunks,
                             void* stream);

/* The text of a code ra_device_digest_enqueue returned (static storage). */
const char* ra_device_digest_error_text(int code);

#ifdef __cplusplus
}
#endif

#endif /* RA_DEVICE_DIGEST_H */
