#pragma once
// Digests (core/digest.h) of many host buffers at once, hashed on a thread pool: every 64 KiB chunk
// of every buffer is a task, so one large buffer does not keep a single thread busy while the
// others idle. The same digests as digest_bytes of each buffer.
#include <cstddef>
#include <vector>

#include "core/digest.h"
#include "core/thread_pool.h"

namespace ra {

// One buffer: the dtype and shape its digest covers, and its bytes (host memory).
struct DigestInput {
  DType dtype = DType::f32;
  Shape shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

std::vector<Digest128> digest_in_parallel(ThreadPool& pool, const std::vector<DigestInput>& inputs);

}  // namespace ra
