#include "backend/cuda/deferred_digests.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {

void DeferredDigests::queue(cudaStream_t stream, const std::vector<DigestItem>& items,
                            std::shared_ptr<std::vector<Digest128>> out) {
  queue_.queue(stream, items);
  targets_.push_back(Target{std::move(out), items.size()});
  const std::size_t bytes = queue_.chunk_count() * sizeof(xxh3::Hash128);
  if (readback_.size() < bytes) {
    // A copy queued by an earlier call may still be writing the old block: it is freed only
    // after the stream has finished (the first steps only: the block only grows).
    RA_CUDA_CHECK(cudaStreamSynchronize(stream));
    readback_ = PinnedHostBuffer(std::max(bytes, 2 * readback_.size()));
  }
  // Every chunk digest queued since the last resolve, this call's and again the earlier calls':
  // one copy, whose last write is what resolve() reads.
  queue_.queue_download(stream, readback_.as<xxh3::Hash128>());
}

void DeferredDigests::resolve() {
  if (targets_.empty()) return;
  const std::vector<Digest128> digests = queue_.take_downloaded(
      std::span<const xxh3::Hash128>(readback_.as<xxh3::Hash128>(), queue_.chunk_count()));
  std::size_t next = 0;
  for (const Target& t : targets_) {
    t.out->assign(digests.begin() + static_cast<std::ptrdiff_t>(next),
                  digests.begin() + static_cast<std::ptrdiff_t>(next + t.count));
    next += t.count;
  }
  targets_.clear();
  if (next != digests.size()) {
    throw std::logic_error("DeferredDigests: " + std::to_string(digests.size()) + " digests for " +
                           std::to_string(next) + " queued");
  }
}

}  // namespace ra::backend::cuda
