#pragma once
// Which cuDNN algorithm and which cuBLAS/cuDNN math settings each KernelMode stands for. Pure
// logic (no device), so the table is tested on any machine.
//
// Convolution (cuDNN legacy API, per direction):
//                     deterministic             nondeterministic           autotune
//   forward           IMPLICIT_PRECOMP_GEMM     IMPLICIT_PRECOMP_GEMM (*)  fastest by cudnnFind
//   backward_data     BWD_DATA_ALGO_1           BWD_DATA_ALGO_0 (atomics)  fastest by cudnnFind
//   backward_filter   BWD_FILTER_ALGO_1         BWD_FILTER_ALGO_0 (atomics) fastest by cudnnFind
//   (*) cuDNN has no forward algorithm that adds with atomics: every forward is deterministic.
// autotune is what PyTorch's cudnn.benchmark = True does: time every algorithm once per geometry
// (cudnnFind*AlgorithmEx, on the op's own operands) at the first call and keep the fastest; which
// one wins can change between runs and machines, and some winners (ALGO_0, ALGO_3) are
// nondeterministic. A pinned algorithm the shape does not support is an error (CudaError naming
// layer, direction and algorithm), never a silent switch to another algorithm: the auditor must
// report what ran.
//
// Math: fp32 everywhere, no TF32 and no tensor cores: cuDNN CUDNN_FMA_MATH, cuBLAS
// CUBLAS_DEFAULT_MATH without the TF32 flag (sgemm then computes in fp32 FMA). ConvPlan sets the
// convolution descriptor's math type and CudaOps the cuBLAS handle's math mode from these
// policies, and the ledger records what cuDNN and cuBLAS report back as set.
// cuBLAS atomics (used by some sgemm split-k kernels): ALLOWED only in nondeterministic mode.
// Custom kernels (bias, loss, pooling) take `deterministic` = mode != nondeterministic, as the
// CPU backend does (autotune chooses algorithms, it does not ask for atomics).
#include <cublas_v2.h>
#include <cudnn.h>

#include "backend/modes.h"

namespace ra::backend::cuda {

enum class ConvDirection { forward, backward_data, backward_filter };

const char* to_string(ConvDirection direction);  // "forward", "backward_data", "backward_filter"

struct ConvAlgorithmPolicy {
  bool autotune = false;  // choose by cudnnFind*AlgorithmEx timing; `algorithm` is then unused
  // The pinned algorithm as the value of cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t
  // or cudnnConvolutionBwdFilterAlgo_t (by direction).
  int algorithm = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
};

ConvAlgorithmPolicy conv_algorithm_policy(KernelMode mode, ConvDirection direction);

// The documented determinism of a cuDNN algorithm (cudnn_ops.h marks BWD_DATA_ALGO_0,
// BWD_FILTER_ALGO_0 and BWD_FILTER_ALGO_3 "non-deterministic"; every forward algorithm is
// deterministic).
bool cudnn_algorithm_is_deterministic(ConvDirection direction, int algorithm);

struct CublasPolicy {
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

CublasPolicy cublas_policy(KernelMode mode);

// What the custom kernels (kernels/*.cuh) are asked for.
inline bool kernels_deterministic(KernelMode mode) {
  return mode != KernelMode::nondeterministic;
}

}  // namespace ra::backend::cuda
