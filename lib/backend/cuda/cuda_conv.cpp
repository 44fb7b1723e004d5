// CudaOps convolutions: cuDNN forward, backward data and backward filter with the algorithm of
// algorithm_policy.h (ConvPlan chooses and caches it per geometry); bias by kernels/bias.cuh.
// Asymmetric padding goes through a padded copy of the input (conv_plan.h explains the split).
// Every cuDNN call uses beta = 0: outputs are overwritten ('='), never accumulated. The ledger
// entry of a chosen algorithm is recorded after its cuDNN call returned success; a failing call
// names the geometry, direction, algorithm, status and cuDNN's last error text (op_execution.h).
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/op_execution.h"
#include "kernels/bias.cuh"

namespace ra::backend::cuda {
namespace {

using cuda::ConvDirection;

// cuDNN's alpha and beta (host pointers): y = 1 * op(x) + 0 * y.
constexpr float kCudnnAlpha = 1.0f, kCudnnBeta = 0.0f;

std::size_t padded_bytes(const cuda::ConvPlan& plan) {
  const ConvGeometry& g = plan.geometry();
  return std::size_t(g.n) * std::size_t(g.c) * std::size_t(plan.padding().in_h) *
         std::size_t(plan.padding().in_w) * sizeof(float);
}

}  // namespace

cuda::ConvPlan& CudaOps::conv_plan(const ConvGeometry& g) {
  const ConvKey key{g.n,        g.c,          g.h,         g.w,        g.k,
                    g.r,        g.s,          g.stride_h,  g.stride_w, g.pad_top,
                    g.pad_left, g.pad_bottom, g.pad_right, g.p,        g.q};
  auto it = conv_plans_.find(key);
  if (it == conv_plans_.end()) {
    it = conv_plans_.emplace(key, std::make_unique<cuda::ConvPlan>(g)).first;
  }
  return *it->second;
}

void CudaOps::pin_algorithms(std::shared_ptr<const AlgorithmPins> pins) {
  pins_ = std::move(pins);
  for (auto& [key, plan] : conv_plans_) plan->forget_choices();
  // The next convolutions choose again, which a captured graph would not: captured anew after.
  step_graph_ = cuda::GraphExec();
  graph_policy_ = cuda::StepGraphPolicy(true);
  steps_begun_ = 0;
}

std::optional<AlgorithmUsed> CudaOps::algorithm_used(const std::string& ledger_key,
                                                     const std::string& direction,
                                                     std::optional<KernelMode> /*mode*/) const {
  // The latest entry: new pins append the algorithm they chose after the one before.
  for (auto it = ledger_.rbegin(); it != ledger_.rend(); ++it) {
    if (it->layer == ledger_key && it->direction == direction) {
      return AlgorithmUsed{it->algorithm, it->deterministic};
    }
  }
  return std::nullopt;
}

cuda::ConvFindOperands CudaOps::find_operands(const float* first, const float* second,
                                              float* output) {
  return {first, second, output, [this](std::size_t bytes) { return workspace(bytes); }};
}

const float* CudaOps::conv_input(const cuda::ConvPlan& plan, const float* x) {
  if (!plan.padding().copies_input()) return x;
  const ConvGeometry& g = plan.geometry();
  const std::size_t bytes = padded_bytes(plan);
  padded_input_.reserve(bytes);
  float* padded = padded_input_.as<float>();
  // The border must read as zeros; the interior is overwritten by the copy.
  RA_CUDA_CHECK(cudaMemsetAsync(padded, 0, bytes, stream()));
  cuda::copy_into_padded(stream(), x, padded, std::int64_t(g.n) * g.c, g.h, g.w, plan.padding());
  return padded;
}

void CudaOps::conv2d_forward(const ConvGeometry& g, const float* x, const float* w,
                             const float* bias, Activation act, float* y) {
  if (replayed_call(g, x, w, bias, act, y)) return;
  cuda::ConvPlan& plan = conv_plan(g);
  const float* input = conv_input(plan, x);
  cuda::ConvChoice& choice = plan.algorithm(cudnn_.get(), ConvDirection::forward, forward_mode_,
                                            find_operands(input, w, y), pins_.get());
  const cuda::ConvAlgorithm& algo = choice.algorithm;
  void* scratch = workspace(algo.workspace_bytes);
  cuda::check_cudnn_execution(
      cudnnConvolutionForward(cudnn_.get(), &kCudnnAlpha, plan.x(), input, plan.w(), w,
                              plan.conv_for(algo),
                              static_cast<cudnnConvolutionFwdAlgo_t>(algo.algorithm), scratch,
                              algo.workspace_bytes, &kCudnnBeta, plan.y(), y),
      "cudnnConvolutionForward", choice.ledger.entry());
  choice.ledger.record_once(ledger_);
  if (bias != nullptr) {
    kernels::bias_add(stream(), y, bias, g.n, g.k, g.p * g.q);
    RA_CUDA_CHECK(cudaGetLastError());
  }
  // In place, as the layer did after the op before the activation was fused into it.
  if (act != Activation::none) queue_activation_forward(act, g.y_size(), y, y);
}

void CudaOps::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                                   const float* relu_gate, float* dx, KernelMode mode) {
  if (replayed_call(g, dy, w, relu_gate, dx, mode)) return;
  cuda::ConvPlan& plan = conv_plan(g);
  float* out = dx;
  if (plan.padding().copies_input()) {
    // The gradient of the padded input; its interior is dx.
    padded_grad_.reserve(padded_bytes(plan));
    out = padded_grad_.as<float>();
  }
  cuda::ConvChoice& choice = plan.algorithm(cudnn_.get(), ConvDirection::backward_data, mode,
                                            find_operands(w, dy, out), pins_.get());
  const cuda::ConvAlgorithm& algo = choice.algorithm;
  void* scratch = workspace(algo.workspace_bytes);
  cuda::check_cudnn_execution(
      cudnnConvolutionBackwardData(cudnn_.get(), &kCudnnAlpha, plan.w(), w, plan.y(), dy,
                                   plan.conv_for(algo),
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algorithm),
                                   scratch, algo.workspace_bytes, &kCudnnBeta, plan.x(), out),
      "cudnnConvolutionBackwardData", choice.ledger.entry());
  choice.ledger.record_once(ledger_);
  if (out != dx) {
    cuda::copy_from_padded(stream(), out, dx, std::int64_t(g.n) * g.c, g.h, g.w, plan.padding());
  }
  // The relu backward of the layer before, in place (the CPU gates as it stores: same values).
  if (relu_gate != nullptr)
    queue_activation_backward(Activation::relu, g.x_size(), relu_gate, dx, dx);
}

void CudaOps::conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                     float* dw, KernelMode mode) {
  if (replayed_call(g, x, dy, dw, mode)) return;
  cuda::ConvPlan& plan = conv_plan(g);
  const float* input = conv_input(plan, x);
  cuda::ConvChoice& choice = plan.algorithm(cudnn_.get(), ConvDirection::backward_filter, mode,
                                            find_operands(input, dy, dw), pins_.get());
  const cuda::ConvAlgorithm& algo = choice.algorithm;
  void* scratch = workspace(algo.workspace_bytes);
  cuda::check_cudnn_execution(
      cudnnConvolutionBackwardFilter(cudnn_.get(), &kCudnnAlpha, plan.x(), input, plan.y(), dy,
                                     plan.conv_for(algo),
                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algorithm),
                                     scratch, algo.workspace_bytes, &kCudnnBeta, plan.w(), dw),
      "cudnnConvolutionBackwardFilter", choice.ledger.entry());
  choice.ledger.record_once(ledger_);
}

void CudaOps::conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                                   KernelMode mode) {
  if (replayed_call(g, dy, db, mode)) return;
  bias_gradient(cuda::conv_geometry_key(g), dy, db, g.n, g.k, g.p * g.q, mode);
}

}  // namespace ra::backend::cuda
