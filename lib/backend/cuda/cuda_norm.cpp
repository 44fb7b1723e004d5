// CudaOps per-channel ops and the residual add (kernels/residual_add.cuh). Global average pooling:
// kernels/global_avgpool.cuh (the CPU's order and bits). Batch normalisation: cuDNN's batch-norm
// forward training, inference and backward in spatial mode (per channel over N, H, W: BatchNorm2d),
// with beta = 0 ('=') for every output.
//   deterministic (and autotune, batch_invariant): CUDNN_BATCHNORM_SPATIAL;
//   nondeterministic: CUDNN_BATCHNORM_SPATIAL_PERSISTENT, the faster mode whose reductions
//     cuDNN does not hold to its reproducibility guarantee. Whether its bits vary on a given GPU is
//     for a GPU run to show (docs/gpu-verification.md); its ledger entry says it may.
// cuDNN's running-average factor is PyTorch's momentum (running = (1 - f) running + f batch) and
// its running variance is the unbiased one: the contract of ops.h as it stands. The legacy API is
// deprecated in cuDNN 9 but still shipped; its warnings are silenced in this file alone.
#include <cudnn.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/split_plan.h"
#include "backend/geometry_key.h"
#include "kernels/global_avgpool.cuh"
#include "kernels/residual_add.cuh"

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace ra::backend::cuda {
namespace {

constexpr float kAlpha = 1.0f, kBeta = 0.0f;

cudnnBatchNormMode_t batchnorm_mode(KernelMode mode) {
  return mode == KernelMode::nondeterministic ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT
                                              : CUDNN_BATCHNORM_SPATIAL;
}

const char* batchnorm_mode_name(cudnnBatchNormMode_t mode) {
  return mode == CUDNN_BATCHNORM_SPATIAL_PERSISTENT ? "CUDNN_BATCHNORM_SPATIAL_PERSISTENT"
                                                    : "CUDNN_BATCHNORM_SPATIAL";
}

LedgerEntry batchnorm_entry(const ChannelGeometry& g, const char* direction,
                            cudnnBatchNormMode_t mode) {
  LedgerEntry entry;
  entry.layer = channel_geometry_key("batchnorm", g);
  entry.direction = direction;
  entry.algorithm = batchnorm_mode_name(mode);
  entry.deterministic = mode == CUDNN_BATCHNORM_SPATIAL;
  entry.math_type = "CUDNN_FMA_MATH";
  entry.chosen_by = "pinned";
  return entry;
}

}  // namespace

void CudaOps::batchnorm_forward_training(const ChannelGeometry& g, const float* x,
                                         const float* gamma, const float* beta, float momentum,
                                         float epsilon, float* running_mean, float* running_var,
                                         float* saved_mean, float* saved_inv_std, float* y,
                                         KernelMode mode) {
  if (replayed_call(g, x, gamma, beta, momentum, epsilon, running_mean, running_var, saved_mean,
                    saved_inv_std, y, mode)) {
    return;
  }
  if (g.x_size() == 0) return;
  const cuda::TensorDescriptor data(g.n, g.c, g.h, g.w), channels(1, g.c, 1, 1);
  const cudnnBatchNormMode_t bn_mode = batchnorm_mode(mode);
  RA_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cudnn_.get(), bn_mode, &kAlpha, &kBeta, data.get(), x, data.get(), y, channels.get(), gamma,
      beta, double(momentum), running_mean, running_var, double(epsilon), saved_mean,
      saved_inv_std));
  note_reduction(batchnorm_entry(g, "forward_training", bn_mode));
}

void CudaOps::batchnorm_forward_inference(const ChannelGeometry& g, const float* x,
                                          const float* gamma, const float* beta,
                                          const float* running_mean, const float* running_var,
                                          float epsilon, float* y) {
  if (replayed_call(g, x, gamma, beta, running_mean, running_var, epsilon, y)) return;
  if (g.x_size() == 0) return;
  const cuda::TensorDescriptor data(g.n, g.c, g.h, g.w), channels(1, g.c, 1, 1);
  RA_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      cudnn_.get(), CUDNN_BATCHNORM_SPATIAL, &kAlpha, &kBeta, data.get(), x, data.get(), y,
      channels.get(), gamma, beta, running_mean, running_var, double(epsilon)));
}

void CudaOps::batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                                 const float* gamma, const float* saved_mean,
                                 const float* saved_inv_std, float* dx, float* dgamma, float* dbeta,
                                 KernelMode mode) {
  if (replayed_call(g, x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta, mode)) return;
  if (g.x_size() == 0) return;
  const cuda::TensorDescriptor data(g.n, g.c, g.h, g.w), channels(1, g.c, 1, 1);
  const cudnnBatchNormMode_t bn_mode = batchnorm_mode(mode);
  // The saved inverse std already holds the forward's epsilon, and cuDNN reads it when given
  // (its documentation: the cache replaces recomputing the statistics); the epsilon argument is
  // the smallest cuDNN accepts.
  RA_CUDNN_CHECK(cudnnBatchNormalizationBackward(cudnn_.get(), bn_mode, &kAlpha, &kBeta, &kAlpha,
                                                 &kBeta, data.get(), x, data.get(), dy, data.get(),
                                                 dx, channels.get(), gamma, dgamma, dbeta,
                                                 CUDNN_BN_MIN_EPSILON, saved_mean, saved_inv_std));
  note_reduction(batchnorm_entry(g, "backward", bn_mode));
}

void CudaOps::residual_add(std::int64_t count, const float* a, const float* b, float* y) {
  if (replayed_call(count, a, b, y)) return;
  kernels::residual_add(stream(), count, a, b, y);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) {
  if (replayed_call(g, x, y)) return;
  kernels::global_avgpool_forward(stream(), g, x, y);
  RA_CUDA_CHECK(cudaGetLastError());
}

void CudaOps::global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) {
  if (replayed_call(g, dy, dx)) return;
  kernels::global_avgpool_backward(stream(), g, dy, dx);
  RA_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ra::backend::cuda
