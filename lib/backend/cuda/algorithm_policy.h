#pragma once
// Which cuDNN algorithm and which cuBLAS/cuDNN math settings each KernelMode stands for. Pure
// logic (no device), so the table is tested on any machine.
//
// Convolution (cuDNN legacy API, per direction):
//                   deterministic  nondeterministic            autotune       batch_invariant
//   forward         heuristic (*)  IMPLICIT_PRECOMP_GEMM (**)  cudnnFind's    IMPLICIT_PRECOMP_GEMM
//   backward_data   heuristic (*)  BWD_DATA_ALGO_0 (atomics)   fastest, per   BWD_DATA_ALGO_1
//   backward_filter heuristic (*)  BWD_FILTER_ALGO_0 (atomics) geometry       heuristic (*)
//   (*) the first deterministic fp32 FMA algorithm, within a fixed workspace limit, of cuDNN's
//   heuristic ranking for the geometry (cudnnGetConvolution*Algorithm_v7; conv_heuristic.h): a
//   function of GPU, cuDNN version and geometry, never of timing, so the same in every run and
//   process on that GPU and library. Until issue 33 deterministic mode pinned
//   IMPLICIT_PRECOMP_GEMM, BWD_DATA_ALGO_1 and BWD_FILTER_ALGO_1, the slowest deterministic
//   algorithms on an H100.
//   (**) cuDNN has no forward algorithm that adds with atomics: every forward is deterministic.
//   Nondeterministic mode keeps the atomic algorithms: the mode exists to show what atomics do
//   (on an H100, issue 33, ALGO_0 was faster than the heuristic's FFT for conv2d_0's filter
//   gradient, 0.066 against 0.087 ms, and slower for conv2d_1's, 0.18 against 0.12 ms).
// batch_invariant pins the per-sample directions to one algorithm whatever the geometry's batch
// size: the heuristic ranks by the whole geometry, so a batch of 1 and one of 128 may run other
// algorithms, which sum a sample's terms in other orders. IMPLICIT_PRECOMP_GEMM (nondeterministic
// mode's forward pin, so known to run these geometries) accumulates each output over the (c, r,
// s) tiles of the implicit GEMM's K dimension. cuDNN does not document that its kernels never
// split that K by the batch size: the invariance of these two pins is what the [gpu] sweep test
// (tests/backend_cuda/invariance_gpu_test.cpp) checks, not a library promise. The filter
// gradient sums over the batch and cannot be invariant: the deterministic heuristic's choice.
// autotune is what PyTorch's cudnn.benchmark = True does: time every algorithm once per geometry
// (cudnnFind*AlgorithmEx, on the op's own operands) at the first call and keep the fastest; which
// one wins can change between runs and machines, and some winners (ALGO_0, ALGO_3) are
// nondeterministic. A pinned algorithm the shape does not support is an error (CudaError naming
// layer, direction and algorithm), never a silent switch to another algorithm: the auditor must
// report what ran; so is a heuristic ranking without an acceptable algorithm.
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
  // Choose by cuDNN's heuristic ranking (conv_heuristic.h); `algorithm` is then unused.
  bool heuristic = false;
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
