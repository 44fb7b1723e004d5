#include "backend/cuda/step_graph_policy.h"

namespace ra::backend::cuda {

StepGraphDecision StepGraphPolicy::decide(const StepFacts& step) {
  if (!full_batch_) full_batch_ = step.batch;
  if (!enabled_ || !step.wanted) return {StepLaunch::eager, "CUDA graphs off"};
  if (step.chooses_algorithm) {
    return {StepLaunch::eager,
            "an algorithm may be chosen or a buffer grown in this step (cudnnFind and allocation "
            "cannot run inside a stream capture)"};
  }
  if (step.batch != *full_batch_) {
    return {StepLaunch::eager, "batch of " + std::to_string(step.batch) + " instead of " +
                                   std::to_string(*full_batch_) +
                                   " (an epoch's last batch): not worth a graph"};
  }
  if (capture_failure_) return {StepLaunch::eager, "capture failed: " + *capture_failure_};
  if (!graph_ready_) return {StepLaunch::capture, ""};
  return {StepLaunch::replay, ""};
}

void StepGraphPolicy::captured(int batch, bool ok, const std::string& error) {
  if (!full_batch_ || batch != *full_batch_) return;  // only the full batch is ever captured
  if (ok) {
    graph_ready_ = true;
  } else {
    capture_failure_ = error.empty() ? std::string("no reason given") : error;
  }
}

}  // namespace ra::backend::cuda
