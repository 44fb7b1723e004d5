#pragma once
// The dense layers' gradients in nondeterministic mode: an atomic split-k GEMM. cuBLAS has no
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
#include <cuda_runtime_api.h>

namespace ra::kernels {

void dense_weight_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* x,
                              const float* dy, float* dw, int slices);
void dense_data_grad_splitk(cudaStream_t stream, int n, int in, int out, const float* dy,
                            const float* w, float* dx, int slices);

}  // namespace ra::kernels
