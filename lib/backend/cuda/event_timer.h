#pragma once
// The CUDA backend's DeviceTimer (backend/device_timer.h): each interval is a pair of CUDA events
// recorded on the backend's stream, read with cudaEventElapsedTime once the last one has passed.
// Events are kept in a pool and reused after each collect(): after the first step of a bench no
// call creates one. The resolution of cudaEventElapsedTime is about 0.5 microseconds (CUDA
// Runtime API reference), well below the ops' 10-300 microseconds on an H100.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "backend/cuda/cuda_resources.h"
#include "backend/device_timer.h"

namespace ra::backend::cuda {

class EventTimer final : public DeviceTimer {
 public:
  // `stream` must outlive the timer.
  explicit EventTimer(cudaStream_t stream) noexcept : stream_(stream) {}

  void start() override;
  void stop(int tag) noexcept override;
  void collect(const std::function<void(int tag, double seconds)>& add) override;

 private:
  struct Interval {
    std::size_t start = 0, end = 0;  // indices into events_
    int tag = 0;
  };
  cudaStream_t stream_;
  std::vector<Event> events_;
  std::size_t used_ = 0;                    // events recorded since the last collect()
  std::size_t open_ = 0;                    // the start event of the interval being timed
  cudaError_t stop_failure_ = cudaSuccess;  // the first cudaEventRecord of stop() that failed
  std::vector<Interval> intervals_;
};

}  // namespace ra::backend::cuda
