#include "backend/cuda/split_plan.h"

#include <utility>

namespace ra::backend::cuda {
namespace {

ReductionPlan base_plan(ReductionOp op, KernelMode mode, std::int64_t length,
                        std::int64_t outputs) {
  ReductionPlan plan;
  plan.op = op;
  plan.length = length;
  plan.outputs = outputs;
  // autotune chooses convolution algorithms; it asks no kernel for atomics (as on the CPU).
  plan.atomic = mode == KernelMode::nondeterministic;
  return plan;
}

// A split-k GEMM of an m x n output summing `k` terms each (both dense gradients).
ReductionPlan splitk_plan(ReductionOp op, KernelMode mode, std::int64_t k, std::int64_t m,
                          std::int64_t n) {
  ReductionPlan plan = base_plan(op, mode, k, m * n);
  if (plan.atomic) {
    plan.slices = kernels::gemm_atomic_slices(plan.length);
    plan.grid = kernels::splitk_grid(m, n, plan.slices);
  }
  return plan;
}

// The batch-invariant split of an m x n output over k: its slices from k alone.
void make_invariant(ReductionPlan& plan, std::int64_t m, std::int64_t n) {
  plan.fixed_slices = kernels::gemm_invariant_slices(plan.length);
  plan.grid = kernels::splitk_grid(m, n, plan.fixed_slices);
}

}  // namespace

ReductionPlan plan_dense_weight_grad(KernelMode mode, const DenseGeometry& g) {
  // dw[out, in] = sum over the batch.
  ReductionPlan plan = splitk_plan(ReductionOp::dense_weight_grad, mode, g.n, g.out, g.in);
  if (!plan.atomic) {
    plan.fixed_slices = kernels::gemm_fixed_slices(g.out, g.in, g.n);
    plan.grid = kernels::splitk_grid(g.out, g.in, plan.fixed_slices);
  }
  return plan;
}

ReductionPlan plan_dense_data_grad(KernelMode mode, const DenseGeometry& g) {
  // dx[n, in] = sum over the output units.
  ReductionPlan plan = splitk_plan(ReductionOp::dense_data_grad, mode, g.out, g.n, g.in);
  if (mode == KernelMode::batch_invariant) make_invariant(plan, g.n, g.in);
  return plan;
}

ReductionPlan plan_dense_forward_invariant(const DenseGeometry& g) {
  // y[n, out] = sum over the inputs.
  ReductionPlan plan = base_plan(ReductionOp::dense_forward, KernelMode::batch_invariant, g.in,
                                 std::int64_t(g.n) * g.out);
  make_invariant(plan, g.n, g.out);
  return plan;
}

ReductionPlan plan_bias_grad(KernelMode mode, int n, int channels, int spatial) {
  ReductionPlan plan = base_plan(ReductionOp::bias_grad, mode, std::int64_t(n) * spatial, channels);
  if (plan.atomic) {
    plan.slices = kernels::bias_atomic_slices(plan.length);
    plan.grid = kernels::bias_atomic_grid(channels, plan.slices);
  } else {
    plan.fixed_slices = kernels::bias_fixed_slices(plan.length);
  }
  return plan;
}

ReductionPlan plan_loss(KernelMode mode, int n) {
  ReductionPlan plan = base_plan(ReductionOp::loss, mode, n, 1);
  if (plan.atomic) {
    plan.slices = kernels::loss_atomic_slices(plan.length);
    plan.grid.x = plan.slices;
    plan.grid.y = plan.grid.z = 1;
  }
  return plan;
}

std::string reduction_algorithm_name(const ReductionPlan& plan, const std::string& kernel) {
  std::string name = "ra::kernels::" + kernel;
  // (A deterministic data gradient that gets here is a batch-invariant one: the others run
  // cuBLAS.)
  const bool dense = plan.op == ReductionOp::dense_weight_grad ||
                     plan.op == ReductionOp::dense_data_grad ||
                     plan.op == ReductionOp::dense_forward;
  if (!plan.atomic && dense) {
    const std::string slices = std::to_string(plan.fixed_slices);
    return name + " (fixed order, " + slices +
           (plan.fixed_slices == 1 ? " slice)" : " slices in order)");
  }
  if (!plan.atomic && plan.fixed_slices >= 2) {
    return name + " (fixed tree, " + std::to_string(plan.fixed_slices) + " slices in order)";
  }
  if (!plan.atomic) return name + " (fixed tree)";
  name += " (atomic, ";
  name += std::to_string(plan.slices);
  name += plan.slices == 1 ? " slice" : " slices";
  if (!plan.can_vary()) name += ": cannot vary";
  return name + ")";
}

LedgerEntry reduction_ledger_entry(const ReductionPlan& plan, const std::string& kernel,
                                   std::string layer, std::string direction,
                                   std::size_t workspace_bytes) {
  LedgerEntry entry;
  entry.layer = std::move(layer);
  entry.direction = std::move(direction);
  entry.algorithm = reduction_algorithm_name(plan, kernel);
  entry.deterministic = !plan.can_vary();
  entry.math_type = kCustomKernelMath;
  entry.workspace_bytes = workspace_bytes;
  entry.chosen_by = "pinned";
  return entry;
}

}  // namespace ra::backend::cuda
