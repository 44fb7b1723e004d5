#include "backend/cuda/algorithm_policy.h"

namespace ra::backend::cuda {

const char* to_string(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::forward:
      return "forward";
    case ConvDirection::backward_data:
      return "backward_data";
    case ConvDirection::backward_filter:
      return "backward_filter";
  }
  return "unknown";
}

ConvAlgorithmPolicy conv_algorithm_policy(KernelMode mode, ConvDirection direction) {
  ConvAlgorithmPolicy policy;
  policy.math = CUDNN_FMA_MATH;
  if (mode == KernelMode::autotune) {
    policy.autotune = true;
    return policy;
  }
  if (mode == KernelMode::deterministic) {
    policy.heuristic = true;
    return policy;
  }
  if (mode == KernelMode::batch_invariant) {
    // The per-sample directions pinned, whatever the batch size (the heuristic ranks by the whole
    // geometry, batch included); the filter gradient sums over the batch: the heuristic's.
    switch (direction) {
      case ConvDirection::forward:
        policy.algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        return policy;
      case ConvDirection::backward_data:
        policy.algorithm = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
        return policy;
      case ConvDirection::backward_filter:
        policy.heuristic = true;
        return policy;
    }
  }
  switch (direction) {
    case ConvDirection::forward:
      policy.algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      break;
    case ConvDirection::backward_data:
      policy.algorithm = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
      break;
    case ConvDirection::backward_filter:
      policy.algorithm = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
      break;
  }
  return policy;
}

bool cudnn_algorithm_is_deterministic(ConvDirection direction, int algorithm) {
  switch (direction) {
    case ConvDirection::forward:
      return true;
    case ConvDirection::backward_data:
      return algorithm != CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    case ConvDirection::backward_filter:
      return algorithm != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 &&
             algorithm != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  }
  return false;
}

CublasPolicy cublas_policy(KernelMode mode) {
  CublasPolicy policy;
  policy.atomics =
      mode == KernelMode::nondeterministic ? CUBLAS_ATOMICS_ALLOWED : CUBLAS_ATOMICS_NOT_ALLOWED;
  policy.math = CUBLAS_DEFAULT_MATH;
  return policy;
}

}  // namespace ra::backend::cuda
