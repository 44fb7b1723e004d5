// How op records get their digests (record/op_recorder.h): hashed on the recorder's threads,
// asked of a device backend per call, or queued on it and resolved at the step's end.
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/parallel_digest.h"
#include "record/op_recorder.h"

namespace ra::record {
namespace {

// A queued digest's stand-in in a record until the step's end (op_recorder.h): a high word no
// digest of the step has but with XXH3's 2^-64 chance per digest, and the ticket.
constexpr std::uint64_t kQueuedHigh = 0x51ed270b27cbd9a7ULL;

Digest128 queued_placeholder(std::size_t ticket) {
  return Digest128{kQueuedHigh, static_cast<std::uint64_t>(ticket)};
}

std::optional<std::size_t> queued_ticket(const Digest128& d) {
  if (d.high != kQueuedHigh) return std::nullopt;
  return static_cast<std::size_t>(d.low);
}

// Below this many bytes in all, the regions are hashed on the calling thread: the pool's hand-off
// would cost more than the hashing (a bias, a loss value).
constexpr std::size_t kParallelBytes = 256 * 1024;

}  // namespace

std::vector<Digest128> OpRecorder::digest_regions(const std::vector<Region>& regions) {
  std::vector<Digest128> out(regions.size());
  std::vector<std::size_t> misses;
  std::size_t miss_bytes = 0;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].host) {  // a value on the caller's stack: hashed here, never cached
      out[i] = digest_bytes(regions[i].dtype, Shape{regions[i].count}, regions[i].data,
                            regions[i].bytes());
      continue;
    }
    const auto it = cache_.find(regions[i].data);
    if (it != cache_.end() && it->second.dtype == regions[i].dtype &&
        it->second.count == regions[i].count) {
      out[i] = it->second.digest;
    } else {
      misses.push_back(i);
      miss_bytes += regions[i].bytes();
    }
  }
  if (!memory().host_accessible()) {
    // Device regions: hashed where they are by the backend, all of this call's in one request
    // (the CUDA backend: one launch, one download of chunk digests; no tensor crosses).
    std::vector<backend::MemoryRegion> on_device;
    for (const std::size_t i : misses) {
      on_device.push_back({regions[i].dtype, regions[i].data, regions[i].count});
    }
    if (on_device.empty()) {
      // every region cached or on the host: nothing to ask the backend
    } else if (queue_digests_) {
      const std::size_t first = ForwardingOps::queue_digests(on_device);
      for (std::size_t m = 0; m < misses.size(); ++m) {
        out[misses[m]] = queued_placeholder(first + m);
      }
      queued_ = first + misses.size();
    } else {
      const std::vector<Digest128> d = ForwardingOps::digest_regions(on_device);
      for (std::size_t m = 0; m < misses.size(); ++m) out[misses[m]] = d[m];
    }
  } else if (miss_bytes < kParallelBytes) {
    for (const std::size_t i : misses) {
      const Region& r = regions[i];
      out[i] = digest_bytes(r.dtype, Shape{r.count}, r.data, r.bytes());
    }
  } else {
    std::vector<DigestInput> inputs;
    for (const std::size_t i : misses) {
      const Region& r = regions[i];
      inputs.push_back({r.dtype, Shape{r.count}, r.data, r.bytes()});
    }
    const std::vector<Digest128> d = digest_in_parallel(pool_, inputs);
    for (std::size_t m = 0; m < misses.size(); ++m) out[misses[m]] = d[m];
  }
  for (const std::size_t i : misses) {
    cache_[regions[i].data] = Cached{regions[i].dtype, regions[i].count, out[i]};
  }
  return out;
}

void OpRecorder::resolve_queued() {
  if (queued_ == 0) return;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Digest128> digests = ForwardingOps::take_queued_digests();
  const std::size_t queued = std::exchange(queued_, 0);
  if (digests.size() != queued) {
    throw std::logic_error("the backend returned " + std::to_string(digests.size()) +
                           " queued digests for " + std::to_string(queued));
  }
  for (trace::OpRecord& r : records_) {
    for (std::vector<Digest128>* list : {&r.in, &r.out}) {
      for (Digest128& d : *list) {
        if (const std::optional<std::size_t> ticket = queued_ticket(d)) d = digests.at(*ticket);
      }
    }
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ra::record
