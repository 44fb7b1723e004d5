// CudaOps dense layers: cuBLAS sgemm on row-major data. cuBLAS is column-major; a row-major
// [rows, cols] matrix is the column-major [cols, rows] matrix (its transpose) with leading
// dimension cols. So each row-major product C = A B is computed as C^T = B^T A^T:
//
//   forward         y[N,OUT]  = x[N,IN] w[OUT,IN]^T   ->  y^T  = op_T(w^T) x^T   m=OUT n=N   k=IN
//   backward data   dx[N,IN]  = dy[N,OUT] w[OUT,IN]   ->  dx^T = w^T dy^T        m=IN  n=N   k=OUT
//   backward weight dw[OUT,IN] = dy^T x               ->  dw^T = x^T op_T(dy^T)  m=IN  n=OUT k=N
//
// beta = 0 everywhere: outputs are overwritten ('='). Bias by kernels/bias.cuh (spatial = 1).
// Every product first sets cuBLAS's atomics and math modes from its KernelMode
// (algorithm_policy.h); the ledger records the modes cuBLAS then reports.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "kernels/bias.cuh"

namespace ra::backend {
namespace {

constexpr float kOne = 1.0f, kZero = 0.0f;

enum DenseDirection : int { kForward, kBackwardData, kBackwardWeight };
const char* const kDenseDirectionNames[] = {"forward", "backward_data", "backward_weight"};

}  // namespace

void CudaOps::set_cublas_mode(KernelMode mode) {
  // Both per call: they are fields of the handle (no device work), and products of different
  // modes share the handle.
  const cuda::CublasPolicy policy = cuda::cublas_policy(mode);
  RA_CUBLAS_CHECK(cublasSetAtomicsMode(cublas_.get(), policy.atomics));
  RA_CUBLAS_CHECK(cublasSetMathMode(cublas_.get(), policy.math));
}

void CudaOps::note_dense(const DenseGeometry& g, int direction) {
  // What the handle holds now (set_cublas_mode ran just before), not what the policy asked for.
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  RA_CUBLAS_CHECK(cublasGetAtomicsMode(cublas_.get(), &atomics_mode));
  RA_CUBLAS_CHECK(cublasGetMathMode(cublas_.get(), &math));
  const bool atomics = atomics_mode == CUBLAS_ATOMICS_ALLOWED;
  if (!dense_noted_.insert({g.n, g.in, g.out, direction, atomics ? 1 : 0, static_cast<int>(math)})
           .second) {
    return;
  }
  cuda::LedgerEntry entry;
  entry.layer = cuda::dense_geometry_key(g);
  entry.direction = kDenseDirectionNames[direction];
  entry.algorithm = atomics ? "cublasSgemm (atomics allowed)" : "cublasSgemm";
  // cuBLAS guarantees the same bits run to run (same architecture and SM count) unless atomics
  // are allowed; it does not say whether an atomic kernel was picked, so allowed = "may not be".
  entry.deterministic = !atomics;
  entry.math_type = cuda::cublas_math_name(math);
  entry.workspace_bytes = cublas_workspace_.size();
  entry.chosen_by = "pinned";
  ledger_.push_back(std::move(entry));
}

void CudaOps::dense_forward(const DenseGeometry& g, const float* x, const float* w,
                            const float* bias, Activation act, float* y) {
  if (g.n == 0 || g.out == 0) return;
  set_cublas_mode(KernelMode::deterministic);
  note_dense(g, kForward);
  RA_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, g.out, g.n, g.in, &kOne, w,
                              g.in, x, g.in, &kZero, y, g.out));
  if (bias != nullptr) {
    kernels::bias_add(stream(), y, bias, g.n, g.out, 1);
    RA_CUDA_CHECK(cudaGetLastError());
  }
  // In place, as the layer did after the op before the activation was fused into it.
  if (act != Activation::none) activation_forward(act, std::int64_t(g.n) * g.out, y, y);
}

void CudaOps::dense_backward_data(const DenseGeometry& g, const float* dy, const float* w,
                                  float* dx, KernelMode mode) {
  if (g.n == 0 || g.in == 0) return;
  set_cublas_mode(mode);
  note_dense(g, kBackwardData);
  RA_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, g.in, g.n, g.out, &kOne, w,
                              g.in, dy, g.out, &kZero, dx, g.in));
}

void CudaOps::dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy,
                                    float* dw, KernelMode mode) {
  if (g.in == 0 || g.out == 0) return;
  set_cublas_mode(mode);
  note_dense(g, kBackwardWeight);
  RA_CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, g.in, g.out, g.n, &kOne, x,
                              g.in, dy, g.out, &kZero, dw, g.in));
}

void CudaOps::dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                                  KernelMode mode) {
  if (g.out == 0) return;
  void* scratch = workspace(kernels::bias_backward_workspace_bytes(g.n, g.out, 1));
  kernels::bias_backward(stream(), dy, db, g.n, g.out, 1, cuda::kernels_deterministic(mode),
                         scratch);
  RA_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ra::backend
