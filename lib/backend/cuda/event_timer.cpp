#include "backend/cuda/event_timer.h"

#include "backend/cuda/cuda_check.h"

namespace ra::backend::cuda {

void EventTimer::start() {
  // Both events of the interval, and its slot in intervals_, exist before it starts, so that
  // stop() allocates nothing and cannot throw.
  while (events_.size() < used_ + 2) events_.emplace_back();
  intervals_.reserve(intervals_.size() + 1);
  RA_CUDA_CHECK(cudaEventRecord(events_[used_].get(), stream_));
  open_ = used_++;
}

void EventTimer::stop(int tag) noexcept {
  const std::size_t end = used_++;
  const cudaError_t status = cudaEventRecord(events_[end].get(), stream_);
  if (status != cudaSuccess && stop_failure_ == cudaSuccess) stop_failure_ = status;
  intervals_.push_back(Interval{open_, end, tag});  // capacity reserved by start()
}

void EventTimer::collect(const std::function<void(int tag, double seconds)>& add) {
  if (stop_failure_ != cudaSuccess) {
    const cudaError_t failure = stop_failure_;
    stop_failure_ = cudaSuccess;
    intervals_.clear();
    used_ = 0;
    RA_CUDA_CHECK(failure);  // "cudaEventRecord" of an interval's end marker
  }
  if (intervals_.empty()) return;
  // The stream runs its work in order: once the last recorded event has passed, all have.
  RA_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1].get()));
  for (const Interval& i : intervals_) {
    float ms = 0.0f;
    RA_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i.start].get(), events_[i.end].get()));
    add(i.tag, static_cast<double>(ms) * 1e-3);
  }
  intervals_.clear();
  used_ = 0;
}

}  // namespace ra::backend::cuda
