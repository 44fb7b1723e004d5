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
// (algorithm_policy.h); the ledger records the modes cuBLAS then reports, once the product ran.
//
// Batch-invariant mode (docs/invariance.md) runs neither the forward product nor the data
// gradient on cuBLAS, which picks its kernel, and with it a split of K, by the whole shape, the
// batch included: the fixed-order split-k kernel with K's slices from K alone
// (kernels/splitk_gemm.cuh: dense_forward_invariant, dense_data_grad_invariant).
//
// The weight gradient never runs cuBLAS: deterministic and autotune modes run the split-k kernel
// below in fixed order (partials stored, then added in slice order).
// Nondeterministic gradients do not run cuBLAS: allowing cuBLAS atomics only permits an atomic
// kernel, and cuBLAS documents its fp32 GEMMs as giving the same bits run to run. They run the
// atomic split-k kernels of kernels/splitk_gemm.cuh as split_plan.h plans them (dy^T x over K =
// batch, dy w over K = out), and the ledger names that kernel, its slices, and whether it can vary.
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/op_execution.h"
#include "backend/cuda/split_plan.h"
#include "kernels/bias.cuh"
#include "kernels/splitk_gemm.cuh"

namespace ra::backend::cuda {
namespace {

// cuBLAS's alpha and beta (host pointers): C = 1 * AB + 0 * C.
constexpr float kBlasAlpha = 1.0f, kBlasBeta = 0.0f;

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

void CudaOps::run_dense_product(const DenseGeometry& g, int direction, KernelMode mode,
                                const std::function<cublasStatus_t()>& product) {
  set_cublas_mode(mode);
  // What the handle holds now, not what the policy asked for.
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  RA_CUBLAS_CHECK(cublasGetAtomicsMode(cublas_.get(), &atomics_mode));
  RA_CUBLAS_CHECK(cublasGetMathMode(cublas_.get(), &math));
  const bool atomics = atomics_mode == CUBLAS_ATOMICS_ALLOWED;
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
  cuda::check_cublas_execution(product(), "cublasSgemm", entry);
  if (dense_noted_.insert({g.n, g.in, g.out, direction, atomics ? 1 : 0, static_cast<int>(math)})
          .second) {
    ledger_.push_back(std::move(entry));
  }
}

void CudaOps::dense_forward(const DenseGeometry& g, const float* x, const float* w,
                            const float* bias, Activation act, float* y) {
  if (replayed_call(g, x, w, bias, act, y)) return;
  if (g.n == 0 || g.out == 0) return;
  if (forward_mode_ == KernelMode::batch_invariant) {
    const cuda::ReductionPlan plan = cuda::plan_dense_forward_invariant(g);
    const std::size_t bytes = kernels::gemm_invariant_workspace_bytes(g.n, g.out, g.in);
    kernels::dense_forward_invariant(stream(), g.n, g.in, g.out, x, w, y,
                                     bytes == 0 ? nullptr : workspace(bytes));
    RA_CUDA_CHECK(cudaGetLastError());
    note_reduction(cuda::reduction_ledger_entry(plan, "dense_forward_invariant",
                                                cuda::dense_geometry_key(g),
                                                kDenseDirectionNames[kForward], bytes));
  } else {
    run_dense_product(g, kForward, KernelMode::deterministic, [&] {
      return cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, g.out, g.n, g.in, &kBlasAlpha, w,
                         g.in, x, g.in, &kBlasBeta, y, g.out);
    });
  }
  if (bias != nullptr) {
    kernels::bias_add(stream(), y, bias, g.n, g.out, 1);
    RA_CUDA_CHECK(cudaGetLastError());
  }
  // In place, as the layer did after the op before the activation was fused into it.
  if (act != Activation::none) queue_activation_forward(act, std::int64_t(g.n) * g.out, y, y);
}

void CudaOps::dense_backward_data(const DenseGeometry& g, const float* dy, const float* w,
                                  float* dx, KernelMode mode) {
  if (replayed_call(g, dy, w, dx, mode)) return;
  if (g.n == 0 || g.in == 0) return;
  const cuda::ReductionPlan plan = cuda::plan_dense_data_grad(mode, g);
  if (plan.atomic) {
    kernels::dense_data_grad_splitk(stream(), g.n, g.in, g.out, dy, w, dx, plan.slices);
    RA_CUDA_CHECK(cudaGetLastError());
    note_reduction(cuda::reduction_ledger_entry(plan, "dense_data_grad_splitk",
                                                cuda::dense_geometry_key(g),
                                                kDenseDirectionNames[kBackwardData], 0));
    return;
  }
  if (mode == KernelMode::batch_invariant) {
    const std::size_t bytes = kernels::gemm_invariant_workspace_bytes(g.n, g.in, g.out);
    kernels::dense_data_grad_invariant(stream(), g.n, g.in, g.out, dy, w, dx,
                                       bytes == 0 ? nullptr : workspace(bytes));
    RA_CUDA_CHECK(cudaGetLastError());
    note_reduction(cuda::reduction_ledger_entry(plan, "dense_data_grad_invariant",
                                                cuda::dense_geometry_key(g),
                                                kDenseDirectionNames[kBackwardData], bytes));
    return;
  }
  run_dense_product(g, kBackwardData, mode, [&] {
    return cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, g.in, g.n, g.out, &kBlasAlpha, w,
                       g.in, dy, g.out, &kBlasBeta, dx, g.in);
  });
}

void CudaOps::dense_backward_weight(const DenseGeometry& g, const float* x, const float* dy,
                                    float* dw, KernelMode mode) {
  if (replayed_call(g, x, dy, dw, mode)) return;
  if (g.in == 0 || g.out == 0) return;
  const cuda::ReductionPlan plan = cuda::plan_dense_weight_grad(mode, g);
  if (plan.atomic) {
    kernels::dense_weight_grad_splitk(stream(), g.n, g.in, g.out, x, dy, dw, plan.slices);
    RA_CUDA_CHECK(cudaGetLastError());
    note_reduction(cuda::reduction_ledger_entry(plan, "dense_weight_grad_splitk",
                                                cuda::dense_geometry_key(g),
                                                kDenseDirectionNames[kBackwardWeight], 0));
    return;
  }
  // Deterministic: the fixed-order split of the same kernel (split_plan.h), not cuBLAS, whose fp32
  // GEMM of this shape (K = batch, few output tiles) ran 1.8x the atomic twin's time on an H100
  // (fixtures h100-2026-11-27, `bench --device cuda`: 0.108 against 0.060 ms per step).
  const std::size_t scratch_bytes =
      kernels::dense_weight_grad_fixed_workspace_bytes(g.in, g.out, plan.fixed_slices);
  kernels::dense_weight_grad_fixed(stream(), g.n, g.in, g.out, x, dy, dw, plan.fixed_slices,
                                   scratch_bytes == 0 ? nullptr : workspace(scratch_bytes));
  RA_CUDA_CHECK(cudaGetLastError());
  note_reduction(
      cuda::reduction_ledger_entry(plan, "dense_weight_grad_fixed", cuda::dense_geometry_key(g),
                                   kDenseDirectionNames[kBackwardWeight], scratch_bytes));
}

void CudaOps::dense_backward_bias(const DenseGeometry& g, const float* dy, float* db,
                                  KernelMode mode) {
  if (replayed_call(g, dy, db, mode)) return;
  if (g.out == 0) return;
  bias_gradient(cuda::dense_geometry_key(g), dy, db, g.n, g.out, 1, mode);
}

void CudaOps::bias_gradient(const std::string& layer, const float* dy, float* db, int n, int k,
                            int spatial, KernelMode mode) {
  const cuda::ReductionPlan plan = cuda::plan_bias_grad(mode, n, k, spatial);
  const std::size_t scratch_bytes =
      kernels::bias_backward_workspace_bytes(n, k, spatial, !plan.atomic);
  // The kernel takes its slices from the same rules (kernels/reduction_split.h) as the plan.
  kernels::bias_backward(stream(), dy, db, n, k, spatial, !plan.atomic, workspace(scratch_bytes));
  RA_CUDA_CHECK(cudaGetLastError());
  note_reduction(
      cuda::reduction_ledger_entry(plan, "bias_backward", layer, "backward_bias", scratch_bytes));
}

void CudaOps::note_reduction(cuda::LedgerEntry entry) {
  std::string key = entry.layer;
  key += '\n';
  key += entry.direction;
  key += '\n';
  key += entry.algorithm;
  if (reductions_noted_.insert(std::move(key)).second) ledger_.push_back(std::move(entry));
}

}  // namespace ra::backend::cuda
