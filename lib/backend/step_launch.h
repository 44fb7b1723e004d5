#pragma once
// How a training step's work was launched (Ops::begin_step): op by op as the ops were called
// (eager), recorded into a CUDA graph and run from it (capture), or run from the graph an earlier
// step captured (replay); with the reason where it was eager. And the tally a run keeps of them
// (TrainResult::step_launches, the trace's end record "step_launch": docs/trace-format.md).
#include <cstdint>
#include <map>
#include <string>

namespace ra::backend {

enum class StepLaunch { eager, capture, replay };

inline const char* to_string(StepLaunch launch) {
  switch (launch) {
    case StepLaunch::capture:
      return "capture";
    case StepLaunch::replay:
      return "replay";
    case StepLaunch::eager:
      break;
  }
  return "eager";
}

struct StepLaunchDecision {
  StepLaunch launch = StepLaunch::eager;
  std::string reason;  // why eager; empty for capture and replay
};

// What the trainer asks of the step it is about to queue.
struct StepRequest {
  int batch = 0;        // samples in this step's batch
  bool graphs = false;  // the run asked for CUDA graphs (run --cuda-graphs on)
};

// Steps of a run by launch, and the eager steps by reason.
struct StepLaunchCounts {
  std::int64_t eager = 0, capture = 0, replay = 0;
  std::map<std::string, std::int64_t> eager_reasons;

  void add(const StepLaunchDecision& d) {
    if (d.launch == StepLaunch::capture) {
      ++capture;
    } else if (d.launch == StepLaunch::replay) {
      ++replay;
    } else {
      ++eager;
      ++eager_reasons[d.reason];
    }
  }
  // A resumed run's segments, each its own trainer's counts, summed into the run's.
  StepLaunchCounts& operator+=(const StepLaunchCounts& other) {
    eager += other.eager;
    capture += other.capture;
    replay += other.replay;
    for (const auto& [reason, count] : other.eager_reasons) eager_reasons[reason] += count;
    return *this;
  }
  bool operator==(const StepLaunchCounts&) const = default;
};

}  // namespace ra::backend
