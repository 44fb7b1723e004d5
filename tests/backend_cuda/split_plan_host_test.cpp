// The split plans of the CUDA backend's atomic reductions (backend/cuda/split_plan.h and the
// rules of kernels/reduction_split.h): which kernel runs in each mode, how the reduced dimension
// is sliced, the launch grids, and what the ledger says about whether the op can vary. Host
// logic only: runs everywhere, CI included.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/split_plan.h"
#include "kernels/reduction_split.h"

namespace {

using namespace ra::backend::cuda;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;
namespace kernels = ra::kernels;

constexpr KernelMode kModes[] = {KernelMode::deterministic, KernelMode::nondeterministic,
                                 KernelMode::autotune};

// Every plan of every op for reduced length `k` (other dimensions fixed and small).
std::vector<ReductionPlan> plans_of_length(KernelMode mode, int k) {
  return {plan_dense_weight_grad(mode, DenseGeometry{k, 9216, 128}),
          plan_dense_data_grad(mode, DenseGeometry{128, 9216, k}), plan_bias_grad(mode, k, 32, 1),
          plan_loss(mode, k)};
}

// Slices in order, each non-empty, covering [0, length) exactly once.
void require_exact_cover(const ReductionPlan& plan) {
  INFO("length " << plan.length << ", slices " << plan.slices);
  if (plan.length == 0) {
    REQUIRE(plan.slices == 0);
    return;
  }
  REQUIRE(plan.slices >= 1);
  REQUIRE(plan.slices <= plan.length);
  REQUIRE(plan.slice_begin(0) == 0);
  std::int64_t shortest = plan.length, longest = 0;
  for (int s = 0; s < plan.slices; ++s) {
    REQUIRE(plan.slice_end(s) > plan.slice_begin(s));                  // non-empty
    if (s > 0) REQUIRE(plan.slice_begin(s) == plan.slice_end(s - 1));  // no gap, no overlap
    const std::int64_t size = plan.slice_end(s) - plan.slice_begin(s);
    shortest = std::min(shortest, size);
    longest = std::max(longest, size);
  }
  REQUIRE(plan.slice_end(plan.slices - 1) == plan.length);
  REQUIRE(longest - shortest <= 1);  // balanced
}

void require_grid_within_limits(const ReductionPlan& plan) {
  INFO("grid " << plan.grid.x << " x " << plan.grid.y << " x " << plan.grid.z);
  REQUIRE(plan.grid.x >= 1);
  REQUIRE(plan.grid.x <= 2147483647);
  REQUIRE(plan.grid.y >= 1);
  REQUIRE(plan.grid.y <= 65535);
  REQUIRE(plan.grid.z >= 1);
  REQUIRE(plan.grid.z <= 65535);
}

}  // namespace

TEST_CASE("split plans: deterministic and autotune keep the deterministic kernels",
          "[cuda][host][split_plan]") {
  for (const KernelMode mode : {KernelMode::deterministic, KernelMode::autotune}) {
    for (const int k : {0, 1, 2, 3, 128, 100000}) {
      for (const ReductionPlan& plan : plans_of_length(mode, k)) {
        INFO("mode " << ra::backend::to_string(mode) << ", k " << k);
        CHECK_FALSE(plan.atomic);
        CHECK(plan.slices == 0);
        CHECK_FALSE(plan.can_vary());
        CHECK(plan.length == k);
      }
    }
  }
}

TEST_CASE("split plans: the deterministic bias gradient's fixed slices",
          "[cuda][host][split_plan]") {
  // From the item count alone: about 2048 items a slice, at most 64; one slice runs one pass.
  CHECK(kernels::bias_fixed_slices(0) == 0);
  CHECK(kernels::bias_fixed_slices(1) == 1);
  CHECK(kernels::bias_fixed_slices(2048) == 1);
  CHECK(kernels::bias_fixed_slices(2049) == 2);
  CHECK(kernels::bias_fixed_slices(1 << 30) == kernels::kBiasMaxSlices);
  for (const KernelMode mode : {KernelMode::deterministic, KernelMode::autotune}) {
    // The Keras MNIST convnet: conv 32 channels of 26 x 26 (86,528 items) and 64 of 24 x 24
    // (73,728) in two passes; dense biases (128 items) in one.
    const ReductionPlan conv0 = plan_bias_grad(mode, 128, 32, 26 * 26);
    CHECK(conv0.fixed_slices == 43);
    CHECK_FALSE(conv0.atomic);
    CHECK_FALSE(conv0.can_vary());
    CHECK(plan_bias_grad(mode, 128, 64, 24 * 24).fixed_slices == 36);
    CHECK(plan_bias_grad(mode, 128, 128, 1).fixed_slices == 1);
    const LedgerEntry two_pass =
        reduction_ledger_entry(conv0, "bias_backward", "conv", "backward_bias", 32 * 43 * 4);
    CHECK(two_pass.algorithm == "ra::kernels::bias_backward (fixed tree, 43 slices in order)");
    CHECK(two_pass.deterministic);
    CHECK(reduction_ledger_entry(plan_bias_grad(mode, 128, 128, 1), "bias_backward", "dense",
                                 "backward_bias", 0)
              .algorithm == "ra::kernels::bias_backward (fixed tree)");
  }
  // Nondeterministic mode keeps its atomic slices and no fixed ones.
  CHECK(plan_bias_grad(KernelMode::nondeterministic, 128, 32, 26 * 26).fixed_slices == 0);
}

TEST_CASE("split plans: the deterministic dense weight gradient's fixed order",
          "[cuda][host][split_plan]") {
  // kernels/reduction_split.h: gemm_fixed_slices. The Keras convnet's [128, 9216] gradient at batch
  // 128 has 288 tiles: 4 slices of 32 rows of the batch, half the atomic twin's 8.
  const DenseGeometry g{128, 9216, 128};
  for (const KernelMode mode : {KernelMode::deterministic, KernelMode::autotune}) {
    const ReductionPlan plan = plan_dense_weight_grad(mode, g);
    CHECK_FALSE(plan.atomic);
    CHECK_FALSE(plan.can_vary());
    CHECK(plan.fixed_slices == 4);
    CHECK(plan.grid.x == 144);
    CHECK(plan.grid.y == 2);
    CHECK(plan.grid.z == 4);
    const LedgerEntry entry =
        reduction_ledger_entry(plan, "dense_weight_grad_fixed", dense_geometry_key(g),
                               "backward_weight", 4 * std::size_t(128) * 9216 * 4);
    CHECK(entry.algorithm ==
          "ra::kernels::dense_weight_grad_fixed (fixed order, 4 slices in order)");
    CHECK(entry.deterministic);
    CHECK(entry.workspace_bytes == 4 * std::size_t(128) * 9216 * 4);
  }
  // Enough tiles for one slice: written straight into dw.
  const ReductionPlan big = plan_dense_weight_grad(KernelMode::deterministic, {128, 4096, 2048});
  CHECK(big.fixed_slices == 1);
  CHECK(reduction_algorithm_name(big, "dense_weight_grad_fixed") ==
        "ra::kernels::dense_weight_grad_fixed (fixed order, 1 slice)");
  // The data gradient keeps cuBLAS in deterministic mode: no fixed slices.
  CHECK(plan_dense_data_grad(KernelMode::deterministic, g).fixed_slices == 0);
}

TEST_CASE("split plans: the batch-invariant dense products slice K by K alone",
          "[cuda][host][split_plan]") {
  // kernels/reduction_split.h: gemm_invariant_slices. The Keras convnet's 9216 -> 128 forward
  // pass: 18 slices of 512 inputs at every batch size; its 128 -> 10 layer: one slice.
  for (const int batch : {1, 2, 31, 64, 128, 4096}) {
    INFO("batch " << batch);
    const ReductionPlan forward = plan_dense_forward_invariant({batch, 9216, 128});
    CHECK_FALSE(forward.atomic);
    CHECK_FALSE(forward.can_vary());
    CHECK(forward.length == 9216);
    CHECK(forward.fixed_slices == 18);
    CHECK(forward.grid.z == 18);
    CHECK(plan_dense_forward_invariant({batch, 128, 10}).fixed_slices == 1);
    // The data gradient sums over the output units: 128 of them, one slice, for any batch.
    const ReductionPlan data =
        plan_dense_data_grad(KernelMode::batch_invariant, DenseGeometry{batch, 9216, 128});
    CHECK_FALSE(data.atomic);
    CHECK(data.fixed_slices == 1);
  }
  CHECK(kernels::gemm_invariant_slices(0) == 0);
  CHECK(kernels::gemm_invariant_slices(512) == 1);
  CHECK(kernels::gemm_invariant_slices(513) == 2);
  CHECK(kernels::gemm_invariant_slices(1 << 30) == kernels::kInvariantMaxSlices);
  const DenseGeometry g{128, 9216, 128};
  CHECK(reduction_algorithm_name(plan_dense_forward_invariant(g), "dense_forward_invariant") ==
        "ra::kernels::dense_forward_invariant (fixed order, 18 slices in order)");
  // The weight gradient sums over the batch: deterministic mode's plan, not an invariant one.
  CHECK(plan_dense_weight_grad(KernelMode::batch_invariant, g).fixed_slices ==
        plan_dense_weight_grad(KernelMode::deterministic, g).fixed_slices);
}

TEST_CASE("split plans: nondeterministic slices race whenever the length allows",
          "[cuda][host][split_plan]") {
  const int lengths[] = {0,    1,    2,    3,     4,     7,       8,       9,   10,
                         16,   100,  127,  128,   129,   255,     256,     257, 1000,
                         2048, 4096, 8191, 65536, 86528, 1 << 20, 50000000};
  for (const int k : lengths) {
    for (const ReductionPlan& plan : plans_of_length(KernelMode::nondeterministic, k)) {
      INFO("op " << static_cast<int>(plan.op) << ", k " << k);
      CHECK(plan.atomic);
      require_exact_cover(plan);
      // At least min(K, 8) slices: >= 3 partials race onto each output whenever K >= 3.
      CHECK(plan.slices >= std::min(k, kernels::kPreferredSlices));
      CHECK(plan.can_vary() == (k >= kernels::kMinRacingSlices));
      if (k >= 1) require_grid_within_limits(plan);
    }
  }
}

TEST_CASE("split plans: one or two partials cannot vary, and the ledger says so",
          "[cuda][host][split_plan]") {
  // Two partials added into zero commute exactly: (0 + a) + b == (0 + b) + a.
  for (const int k : {1, 2}) {
    for (const ReductionPlan& plan : plans_of_length(KernelMode::nondeterministic, k)) {
      INFO("k " << k);
      CHECK(plan.slices == k);
      CHECK_FALSE(plan.can_vary());
      const LedgerEntry entry = reduction_ledger_entry(plan, "kernel", "layer", "dir", 0);
      CHECK(entry.deterministic);
      CHECK(entry.algorithm == "ra::kernels::kernel (atomic, " + std::to_string(k) +
                                   (k == 1 ? " slice" : " slices") + ": cannot vary)");
    }
  }
  // An empty reduction (a batch of 0 rows) only zeroes its output.
  const ReductionPlan empty =
      plan_dense_weight_grad(KernelMode::nondeterministic, DenseGeometry{0, 4, 4});
  CHECK(empty.slices == 0);
  CHECK_FALSE(empty.can_vary());
}

TEST_CASE("split plans: the Keras MNIST convnet's reductions", "[cuda][host][split_plan]") {
  const KernelMode nd = KernelMode::nondeterministic;
  // dense 128x9216->128 weight gradient: 8 slices of 16 rows of the batch; 2 x 144 tiles.
  const ReductionPlan dw = plan_dense_weight_grad(nd, DenseGeometry{128, 9216, 128});
  CHECK(dw.slices == 8);
  CHECK(dw.slice_end(0) == 16);
  CHECK(dw.outputs == 128 * 9216);
  CHECK(dw.grid.x == 144);
  CHECK(dw.grid.y == 2);
  CHECK(dw.grid.z == 8);
  // dense 128x128->10 data gradient: K = 10 output units, 8 slices of 1 or 2.
  const ReductionPlan dx = plan_dense_data_grad(nd, DenseGeometry{128, 128, 10});
  CHECK(dx.slices == 8);
  CHECK(dx.can_vary());
  // Biases: dense (128 rows) 8 slices; conv 32 channels of 26 x 26 (86,528 items) 43 slices.
  CHECK(plan_bias_grad(nd, 128, 128, 1).slices == 8);
  const ReductionPlan conv_bias = plan_bias_grad(nd, 128, 32, 26 * 26);
  CHECK(conv_bias.slices == 43);
  CHECK(conv_bias.grid.x == 43);
  CHECK(conv_bias.grid.y == 32);
  // Loss over a batch of 128: 8 blocks of 16 rows (it used to be one block, which cannot vary).
  CHECK(plan_loss(nd, 128).slices == 8);
  CHECK(plan_loss(nd, 128).can_vary());
  // Long reductions take more slices, up to each kernel's cap.
  CHECK(plan_loss(nd, 60000).slices == 235);
  CHECK(plan_loss(nd, 1 << 20).slices == kernels::kLossMaxSlices);
  CHECK(plan_bias_grad(nd, 1 << 20, 4, 1).slices == kernels::kBiasMaxSlices);
  CHECK(plan_dense_weight_grad(nd, DenseGeometry{1 << 20, 4, 4}).slices == kernels::kGemmMaxSlices);
}

TEST_CASE("split plans: grids of huge outputs stay within CUDA's limits",
          "[cuda][host][split_plan]") {
  // 2^24 output rows: 262,144 row tiles, capped at 65,535 (the kernel loops over the rest).
  const kernels::GridShape tall = kernels::splitk_grid(std::int64_t(1) << 24, 64, 8);
  CHECK(tall.y == 65535);
  CHECK(tall.x == 1);
  CHECK(tall.z == 8);
  const kernels::GridShape wide = kernels::splitk_grid(1, std::int64_t(1) << 30, 3);
  CHECK(wide.x == 65535);
  CHECK(wide.y == 1);
  // Bias of 100,000 channels: y capped, the kernel loops over channels.
  const ReductionPlan bias = plan_bias_grad(KernelMode::nondeterministic, 16, 100000, 1);
  require_grid_within_limits(bias);
  CHECK(bias.grid.y == 65535);
}

TEST_CASE("split plans: ledger entries state what ran and whether it can vary",
          "[cuda][host][split_plan]") {
  const DenseGeometry g{128, 9216, 128};
  const LedgerEntry atomic = reduction_ledger_entry(
      plan_dense_weight_grad(KernelMode::nondeterministic, g), "dense_weight_grad_splitk",
      dense_geometry_key(g), "backward_weight", 0);
  CHECK(atomic.layer == "dense 128x9216->128");
  CHECK(atomic.direction == "backward_weight");
  CHECK(atomic.algorithm == "ra::kernels::dense_weight_grad_splitk (atomic, 8 slices)");
  CHECK_FALSE(atomic.deterministic);
  CHECK(atomic.math_type == kCustomKernelMath);
  CHECK(atomic.chosen_by == "pinned");

  const LedgerEntry tree =
      reduction_ledger_entry(plan_loss(KernelMode::deterministic, 128), "softmax_cross_entropy",
                             loss_geometry_key("softmax_cross_entropy", 128, 10), "batch_sum", 512);
  CHECK(tree.layer == "softmax_cross_entropy 128x10");
  CHECK(tree.algorithm == "ra::kernels::softmax_cross_entropy (fixed tree)");
  CHECK(tree.deterministic);
  CHECK(tree.workspace_bytes == 512);

  for (const KernelMode mode : kModes) {
    const ReductionPlan plan = plan_bias_grad(mode, 128, 32, 676);
    const LedgerEntry entry =
        reduction_ledger_entry(plan, "bias_backward", "conv", "backward_bias", 0);
    INFO(ra::backend::to_string(mode));
    CHECK(entry.deterministic == (mode != KernelMode::nondeterministic));
  }
}
