#pragma once
// The dense layers' gradients in nondeterministic mode: an atomic split-k GEMM; the weight
// gradient in deterministic mode, and the forward product and data gradient in batch-invariant
// mode: the same GEMM split in fixed order. cuBLAS has no
// atomic sgemm to ask for (CUBLAS_ATOMICS_ALLOWED only permits it, and the fp32 GEMMs of these
// shapes do not use it), so a run that asks for nondeterministic dense gradients gets this kernel.
// Row-major, as in lib/backend/cuda/cuda_dense.cpp:
//
//   dense_weight_grad_splitk  dw[out, in] = sum over b < n of dy[b, out] * x[b, in]   ('=')
//   dense_data_grad_splitk    dx[n, in]   = sum over o < out of dy[n, o] * w[o, in]   ('=')
//
// The output is zeroed, then the reduced dimension (n, resp. out) is cut into `slices` slices
// (kernels/reduction_split.h: slice_begin); each block computes a kGemmTile x kGemmTile output
// tile over one slice (fp32 products then adds, in increasing k, --fmad=false) and atomicAdds it
// into the output. With 3 or more slices the completion order, hence the bits, may vary from run
// to run; values agree with cuBLAS within rounding. `slices` comes from gemm_atomic_slices (the
// ledger states the same number); 0 (an empty reduction) only zeroes the output.
//
//   dense_weight_grad_fixed   dw as dense_weight_grad_splitk, deterministic: the same tiles over
//                             `slices` fixed slices (gemm_fixed_slices), each block storing its
//                             partial tile ('=') into scratch [slices][out][in], then
//                             dw = ((p0 + p1) + p2) + ... per output, in slice order; the same bits
//                             on every run. One slice writes dw directly (no scratch). Each
//                             partial is 0.0f + a0 b0 + a1 b1 + ... in increasing k, each product
//                             rounded before it is added (the host twin in
//                             tests/backend_cuda/splitk_fixed_host_test.cpp).
//
//   dense_forward_invariant   y[n, out] = sum over i < in of x[n, i] * w[out, i]   ('=')
//   dense_data_grad_invariant dx as dense_data_grad_splitk ('=')
//                             batch-invariant mode (docs/invariance.md): the fixed-order split
//                             of dense_weight_grad_fixed with K (in, resp. out) cut into
//                             gemm_invariant_slices(K) slices, from K alone: each output is
//                             ((p0 + p1) + p2) + ... of partials 0.0f + a0 b0 + a1 b1 + ... over
//                             its slice in increasing k, a chain that no batch size changes
//                             (tiles along the batch never cut k). Scratch as for
//                             dense_weight_grad_fixed ([slices][n][out or in]; none for 1 slice).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace ra::kernels {

void dense_weight_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* x,
                              const float* dy, float* dw, int slices);
// Scratch bytes dense_weight_grad_fixed needs (0 for one slice).
std::size_t dense_weight_grad_fixed_workspace_bytes(int in, int out, int slices);
void dense_weight_grad_fixed(cudaStream_t stream, int n, int in, int out, const float* x,
                             const float* dy, float* dw, int slices, void* scratch);
void dense_data_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* dy,
                            const float* w, float* dx, int slices);

// Scratch bytes of the invariant products of an [rows, cols] output over k terms (0: 1 slice).
std::size_t gemm_invariant_workspace_bytes(int rows, int cols, int k);
void dense_forward_invariant(cudaStream_t stream, int n, int in, int out, const float* x,
                             const float* w, float* y, void* scratch);
void dense_data_grad_invariant(cudaStream_t stream, int n, int in, int out, const float* dy,
                               const float* w, float* dx, void* scratch);

}  // namespace ra::kernels
