#pragma once
// When a training step may run as a CUDA graph (issue 45, part 3): captured once per geometry
// (the batch size: every other shape of the step follows from the spec), then replayed; and when
// it must run eagerly instead, with the reason the ledger and the trace are to state. Pure logic
// (no device), so the rules are tested on any machine; CudaOps::begin_step and end_step
// (cuda_ops.h) carry them out.
//
// The rules, in order:
//   1. graphs off                      -> eager ("CUDA graphs off")
//   2. an algorithm may be chosen      -> eager: cudnnFind (autotune, deterministic autotune)
//      in this step (the run's first      times kernels, synchronizes and allocates, none of which
//      step, or the step before chose     a stream capture allows; the first step after a settled
//      one or grew a buffer)              one is captured
//   3. a batch of another size than    -> eager: the short last batch of an epoch (drop_last
//      the first full one                 false) is one step in an epoch; a graph of it would be
//                                         captured for one replay per epoch
//   4. capture of this geometry failed -> eager for good, with the failure's text: the step never
//      once                               alternates between a graph and eager kernels
//   5. no graph for the geometry yet   -> capture (the captured graph then runs this step); also
//      (or it was invalidated)            after a replay found the step's buffers moved
//   6. otherwise                       -> replay
// A replay runs the same kernels in the same order as the captured step, so graphs do not change
// a result: deterministic runs stay bitwise identical.
#include <optional>
#include <string>

#include "backend/step_launch.h"

namespace ra::backend::cuda {

using backend::StepLaunch;
using backend::to_string;
using StepGraphDecision = backend::StepLaunchDecision;

// What the step is about to do, as the backend knows it before launching it.
struct StepFacts {
  int batch = 0;                   // samples in this step's batch
  bool chooses_algorithm = false;  // some op of the step may still choose its algorithm
  bool wanted = true;              // the run asked for graphs (StepRequest::graphs)
};

class StepGraphPolicy {
 public:
  explicit StepGraphPolicy(bool enabled) : enabled_(enabled) {}

  // The launch of the next step; a capture decision assumes the capture will be attempted.
  StepGraphDecision decide(const StepFacts& step);
  // After a capture: its graph now exists (ok) or the capture failed with `error`.
  void captured(int batch, bool ok, const std::string& error = "");
  // The graph no longer fits the step (a buffer it uses moved): the next full step captures anew.
  void invalidate() noexcept { graph_ready_ = false; }

 private:
  bool enabled_;
  std::optional<int> full_batch_;  // the first batch size seen: the geometry graphs are made for
  bool graph_ready_ = false;
  std::optional<std::string> capture_failure_;
};

}  // namespace ra::backend::cuda
