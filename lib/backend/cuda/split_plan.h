#pragma once
// What each reducing op of the CUDA backend that runs a custom kernel (or, for dense gradients,
// a custom kernel instead of cuBLAS) runs in a mode, and whether its result can vary from run to
// run: the plan the op launches from and the ledger entry it records. Pure logic (no device);
// the slicing rules themselves are kernels/reduction_split.h, shared with the kernels.
//
//   op (reduced length K)                 deterministic / autotune      nondeterministic
//   dense weight gradient (K = batch)     dense_weight_grad_fixed (**)  dense_weight_grad_splitk
//   dense data gradient (K = out)         cublasSgemm, atomics off      dense_data_grad_splitk
//                                         batch_invariant: dense_data_grad_invariant (***)
//   dense forward (K = in)                cublasSgemm (CudaOps's forward mode decides)
//                                         batch_invariant: dense_forward_invariant (***)
//   bias gradient (K = batch * spatial)   bias_backward, fixed tree (*) bias_backward, atomic
//                                                                        slices
//   loss batch sum (K = batch)            fixed tree of block partials  atomic slices
//   (*) in two passes over fixed slices (partials, then their sum in slice order) when K is
//   above 2048 (kernels/bias.cuh).
//   (**) the split-k GEMM's tiles over fixed slices whose partials are added in slice order
//   (kernels/reduction_split.h: gemm_fixed_slices says how many, and why).
//   (***) the same fixed-order split with K's slices from K alone (gemm_invariant_slices): a
//   sample's sum does not change with the batch size, as cuBLAS's choice of kernel by M may.
//   Batch-invariant mode's other reductions run their deterministic plans.
//
// Nondeterministic: K is cut into `slices` non-empty slices (at least min(K, 8)) whose partials
// are atomically added into each zeroed output. The result can vary only with 3 or more slices
// (two partials added into zero commute exactly), so K = 1 or 2 is planned, run and recorded as
// deterministic even in nondeterministic mode: no label the kernel cannot earn.
#include <cstdint>
#include <string>

#include "backend/cuda/ledger.h"
#include "backend/geometry.h"
#include "backend/geometry_key.h"
#include "backend/modes.h"
#include "kernels/reduction_split.h"

namespace ra::backend::cuda {

enum class ReductionOp { dense_weight_grad, dense_data_grad, dense_forward, bias_grad, loss };

struct ReductionPlan {
  ReductionOp op = ReductionOp::loss;
  std::int64_t length = 0;   // K: terms summed into each output
  std::int64_t outputs = 0;  // M: outputs (dense: out * in or n * in; bias: channels; loss: 1)
  bool atomic = false;       // the atomic (sliced) kernel runs; otherwise the deterministic path
  int slices = 0;            // atomic: partials added into each output (0 when K = 0)
  kernels::GridShape grid;   // split-k GEMMs and atomic kernels: the launch grid (x, y, z)
  // Deterministic bias and dense weight gradients, batch-invariant dense products: the fixed
  // slices whose partials pass 2 adds in slice order (kernels/reduction_split.h:
  // bias_fixed_slices, gemm_fixed_slices, gemm_invariant_slices); 0 or 1: one pass. 0 for every
  // other plan.
  int fixed_slices = 0;

  // Whether two runs of the op on the same inputs can give different bits.
  bool can_vary() const { return atomic && slices >= kernels::kMinRacingSlices; }
  std::int64_t slice_begin(int s) const { return kernels::slice_begin(length, slices, s); }
  std::int64_t slice_end(int s) const { return kernels::slice_begin(length, slices, s + 1); }
};

ReductionPlan plan_dense_weight_grad(KernelMode mode, const DenseGeometry& g);
ReductionPlan plan_dense_data_grad(KernelMode mode, const DenseGeometry& g);
// The forward product in batch-invariant mode (the other modes run cuBLAS).
ReductionPlan plan_dense_forward_invariant(const DenseGeometry& g);
// y[n, channels, spatial]: dense layers have spatial = 1, convolutions P * Q.
ReductionPlan plan_bias_grad(KernelMode mode, int n, int channels, int spatial);
ReductionPlan plan_loss(KernelMode mode, int n);

// What the ledger calls the kernel that runs: "ra::kernels::dense_weight_grad_splitk (atomic, 8
// slices)", "ra::kernels::bias_backward (fixed tree)", "ra::kernels::bias_backward (fixed tree,
// 43 slices in order)", "ra::kernels::dense_weight_grad_fixed (fixed order, 4 slices in order)",
// "ra::kernels::softmax_cross_entropy (atomic, 2 slices: cannot vary)",
// "ra::kernels::dense_forward_invariant (fixed order, 18 slices in order)".
// `kernel` is the launcher's name. (Dense plans that run no custom kernel run cuBLAS and are
// recorded by CudaOps::run_dense_product.)
std::string reduction_algorithm_name(const ReductionPlan& plan, const std::string& kernel);

// The ledger entry of a custom-kernel reduction: deterministic = !can_vary(), math_type
// kCustomKernelMath, chosen_by "pinned".
LedgerEntry reduction_ledger_entry(const ReductionPlan& plan, const std::string& kernel,
                                   std::string layer, std::string direction,
                                   std::size_t workspace_bytes);

// The math of kernels/: fp32 multiplies and adds, never contracted into FMAs (--fmad=false).
inline constexpr const char* kCustomKernelMath = "FP32 (no FMA contraction)";

// The ledger's layer key of a loss (backend/geometry_key.h).
using backend::loss_geometry_key;

}  // namespace ra::backend::cuda
