#pragma once
// Device time of queued work. A backend whose ops return once their work is queued (the CUDA
// backend) cannot be timed by host clocks around each call: they would measure the launch, and
// the work would land in whichever later call waits for it. Such a backend hands out a
// DeviceTimer (Ops::make_device_timer) that brackets intervals of its queue with markers (CUDA
// events: cudaEventRecord before and after the call, cudaEventElapsedTime once both have passed)
// and reports each interval's device time when asked. `repro-audit bench --device cuda` times its
// per-op table so (train/op_timer.h). A backend whose calls return when their work is done (the
// CPU) hands out none: host clocks are exact there.
#include <functional>

namespace ra::backend {

class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Queues the start marker of an interval, after the work queued so far.
  virtual void start() = 0;
  // Queues the end marker of the interval the last start() began, and tags it. Never throws (it
  // runs in destructors): a failure is kept and thrown by the next collect().
  virtual void stop(int tag) noexcept = 0;
  // Waits until every queued marker has passed, then calls add(tag, seconds) once per interval
  // stopped since the last collect(), in the order they were queued, and forgets them.
  virtual void collect(const std::function<void(int tag, double seconds)>& add) = 0;
};

}  // namespace ra::backend
