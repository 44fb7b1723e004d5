// CudaOps: the training step as a CUDA graph (cuda_ops.h begin_step, end_step; the rules in
// step_graph_policy.h). A step is captured once per geometry with the stream's capture, in the
// thread-local mode (a call of this thread that a capture cannot hold, an allocation, a wait,
// fails the capture rather than run), and replayed by one cudaGraphLaunch per step: the same
// kernels in the same order, so a replay gives the bits of the eager step.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"

namespace ra::backend::cuda {
namespace {

// The step arguments' first buffer: about 1000 optimizer rules.
constexpr std::size_t kStepScalarBytes = std::size_t(64) << 10;

}  // namespace

std::size_t CudaOps::settled_state() const noexcept {
  // Each term only grows during a run; a sum that moved says one of them did.
  return conv_plans_.size() + ledger_.size() + dense_noted_.size() + reductions_noted_.size() +
         workspace_.size() + padded_input_.size() + padded_grad_.size();
}

void CudaOps::fold_own_buffers() {
  step_print_.add(workspace_.data(), workspace_.size(), padded_input_.data(), padded_grad_.data(),
                  loss_scalars_.data(), loss_readback_.get(), cublas_workspace_.data());
}

void CudaOps::require_outside_graph_step(const char* call) const {
  if (launch_ != StepLaunch::eager) {
    throw std::logic_error(std::string(call) + " inside a " + to_string(launch_) +
                           "d step: it waits for the stream, which a CUDA graph step cannot");
  }
}

StepLaunchDecision CudaOps::begin_step(const StepRequest& request) {
  if (launch_ != StepLaunch::eager) {
    throw std::logic_error("begin_step inside a step: end_step was not called");
  }
  const std::size_t settled = settled_state();
  const bool unsettled = steps_begun_ == 0 || settled != settled_at_begin_;
  settled_at_begin_ = settled;
  ++steps_begun_;
  step_batch_ = request.batch;
  StepLaunchDecision d = graph_policy_.decide({request.batch, unsettled, request.graphs});
  if (d.launch == StepLaunch::capture) {
    // Room for the step's arguments, as the eager step before counted them (the one allocation a
    // capture needs, made before it begins).
    step_scalars_.reserve(stream(), std::max(kStepScalarBytes, 2 * step_scalars_.used()));
    const cudaError_t status = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      graph_policy_.captured(request.batch, false,
                             std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(status));
      d = graph_policy_.decide({request.batch, false, request.graphs});
    }
  }
  launch_ = d.launch;
  step_print_.reset();
  step_scalars_.begin_step();
  memory_.set_replaying(launch_ == StepLaunch::replay);
  return d;
}

void CudaOps::abandon_step() {
  launch_ = StepLaunch::eager;
  memory_.set_replaying(false);
  pending_loss_.reset();  // its value was never computed
}

bool CudaOps::end_step(std::string_view op_failure) {
  const StepLaunch launch = launch_;
  if (launch == StepLaunch::eager) {
    // A step that threw never reaches its synchronize(): its loss, if queued, is nobody's.
    if (!op_failure.empty()) pending_loss_.reset();
    return op_failure.empty();
  }
  fold_own_buffers();
  if (launch == StepLaunch::replay && !op_failure.empty()) {
    abandon_step();  // nothing was queued; the trainer reports the failure
    return false;
  }
  if (launch == StepLaunch::replay) {
    if (step_print_.value() != graph_print_ || step_scalars_.used() != graph_scalar_bytes_) {
      // Buffers moved since the capture, or the ops differ: the graph would run on memory it
      // does not own. Dropped; the next full step is captured anew.
      abandon_step();
      step_graph_ = cuda::GraphExec();
      graph_policy_.invalidate();
      return false;
    }
    const cudaGraphExec_t graph = step_graph_.get();
    launch_ = StepLaunch::eager;
    memory_.set_replaying(false);
    RA_CUDA_CHECK(cudaGraphLaunch(graph, stream()));
    return true;
  }
  // Capture: ended whether its ops succeeded or one threw (the trainer calls end_step then too).
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream(), &raw);
  const cuda::Graph graph(raw);
  std::string failure;
  if (!op_failure.empty()) {
    failure = "an op failed inside the capture: " + std::string(op_failure);
  } else if (ended != cudaSuccess || raw == nullptr) {
    failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(ended);
  }
  cudaGraphExec_t exec = nullptr;
  if (failure.empty()) {
    const cudaError_t made = cudaGraphInstantiate(&exec, graph.get(), 0);
    if (made != cudaSuccess) {
      failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(made);
    }
  }
  if (!failure.empty()) {
    static_cast<void>(cudaGetLastError());  // the capture's error is reported here, once
    abandon_step();
    graph_policy_.captured(step_batch_, false, failure);
    return false;
  }
  step_graph_ = cuda::GraphExec(exec);
  graph_print_ = step_print_.value();
  graph_scalar_bytes_ = step_scalars_.used();
  graph_policy_.captured(step_batch_, true);
  launch_ = StepLaunch::eager;
  RA_CUDA_CHECK(cudaGraphLaunch(step_graph_.get(), stream()));
  return true;
}

}  // namespace ra::backend::cuda
