#pragma once
// How the nondeterministic (atomic) reductions of kernels/ cut their reduced dimension: pure
// integer rules, compiled by the kernels (nvcc) and by the host (the ledger's plan,
// lib/backend/cuda/split_plan.h, and its tests), so that what the ledger says and what the
// kernels launch come from one source.
//
// A reduction of `length` terms into each output is cut into `slices` contiguous slices; each
// slice's partial is added into the zeroed output with atomicAdd, in completion order. Slice s
// covers [slice_begin(length, slices, s), slice_begin(length, slices, s + 1)): consecutive,
// covering [0, length) exactly once, every slice non-empty when slices <= length, lengths
// differing by at most one.
//
// Why at least 3: two partials added into a zero output commute exactly ((0 + a) + b ==
// (0 + b) + a, signed zeros included), so only a third one can make the completion order
// change the bits (the CPU backend's split-k uses at least 3 parts for the same reason). The
// rules below ask for kPreferredSlices (8) whenever length allows, more for long reductions.
#include <cstdint>

#include "core/host_device.h"
#include "core/integer_math.h"

namespace ra::kernels {

// The fewest atomic partials per output whose completion order can change the result.
inline constexpr int kMinRacingSlices = 3;
// Slices asked for whenever the reduced length allows (one slice per term below that).
inline constexpr int kPreferredSlices = 8;
// CUDA's limit on gridDim.y and gridDim.z (gridDim.x allows 2^31 - 1).
inline constexpr std::int64_t kMaxGridYZ = 65535;

RA_HOST_DEVICE std::int64_t slice_begin(std::int64_t length, int slices, int s) {
  return length * s / slices;
}

// Slices for an atomic reduction of `length` terms: 0 for an empty reduction; otherwise
// min(length, max(kPreferredSlices, ceil(length / terms_per_slice))) capped at max_slices (itself
// >= kPreferredSlices): at least min(length, 8), never an empty slice.
inline int atomic_slices(std::int64_t length, std::int64_t terms_per_slice, int max_slices) {
  if (length <= 0) return 0;
  std::int64_t slices = ra::ceil_div(length, terms_per_slice);
  if (slices < kPreferredSlices) slices = kPreferredSlices;
  if (slices > max_slices) slices = max_slices;
  if (slices > length) slices = length;
  return static_cast<int>(slices);
}

// ---- the rules of each atomic kernel ----

// bias_backward (kernels/bias.cu): n * spatial items per channel, about 2048 per slice (8 per
// thread of a 256-thread block), at most 64 slices.
inline constexpr std::int64_t kBiasTermsPerSlice = 2048;
inline constexpr int kBiasMaxSlices = 64;
inline int bias_atomic_slices(std::int64_t items) {
  return atomic_slices(items, kBiasTermsPerSlice, kBiasMaxSlices);
}

// bias_backward's deterministic path cuts the same items into FIXED slices, from the item count
// alone (never the device, its SM count or load): ceil(items / kBiasTermsPerSlice), at most
// kBiasMaxSlices. With 2 or more, pass 1 sums each slice of each channel in its own block (the
// block's fixed tree) into a partial in device scratch, and pass 2 adds each channel's partials
// in slice order: the same bits on every run, and slices x channels blocks instead of one block
// per channel (32 blocks for the Keras convnet's first layer: a fraction of an H100's 132 SMs).
// With 1 (or 0: no items) the one-pass kernel runs, as before this rule.
inline int bias_fixed_slices(std::int64_t items) {
  if (items <= 0) return 0;
  const std::int64_t slices = ra::ceil_div(items, kBiasTermsPerSlice);
  return static_cast<int>(slices < kBiasMaxSlices ? slices : kBiasMaxSlices);
}

// Losses (kernels/loss.cu): n rows, one block per slice, about 256 rows (one per thread) per
// slice, at most 1024 slices (the deterministic path's block cap).
inline constexpr std::int64_t kLossTermsPerSlice = 256;
inline constexpr int kLossMaxSlices = 1024;
inline int loss_atomic_slices(std::int64_t rows) {
  return atomic_slices(rows, kLossTermsPerSlice, kLossMaxSlices);
}

// Split-k GEMM (kernels/splitk_gemm.cu): about 128 terms of k per slice, at most 64 slices, so a
// batch-128 weight gradient runs 8 slices of 16.
inline constexpr std::int64_t kGemmTermsPerSlice = 128;
inline constexpr int kGemmMaxSlices = 64;
inline int gemm_atomic_slices(std::int64_t k) {
  return atomic_slices(k, kGemmTermsPerSlice, kGemmMaxSlices);
}

// The split-k GEMM's output tiles: kGemmTile x kGemmTile outputs per block. Grid x runs over the
// column tiles, y over the row tiles (capped at kMaxGridYZ: blocks loop over the rest), z over the
// slices.
inline constexpr int kGemmTile = 64;
struct GridShape {
  std::int64_t x = 0, y = 0, z = 0;
};
inline GridShape splitk_grid(std::int64_t m, std::int64_t n, int slices) {
  GridShape grid;
  grid.x = ra::ceil_div(n, std::int64_t(kGemmTile));
  if (grid.x > kMaxGridYZ) grid.x = kMaxGridYZ;  // blocks loop; keeps every dimension small
  grid.y = ra::ceil_div(m, std::int64_t(kGemmTile));
  if (grid.y > kMaxGridYZ) grid.y = kMaxGridYZ;
  grid.z = slices;
  return grid;
}

// The dense weight gradient's deterministic path (kernels/splitk_gemm.cuh,
// dense_weight_grad_fixed): the same tiles, K cut into FIXED slices (from the sizes alone, never
// the device) whose partial tiles pass 1 stores ('=') into scratch [slices][m][n]; pass 2 adds
// each output's partials in slice order. The shape model, against the atomic twin
// (gemm_atomic_slices, 8 slices for a batch of 128):
//   - the GEMM itself is the same work either way; what the slices buy is blocks: a 64 x 64 tile
//     per block leaves the Keras convnet's [128, 9216] gradient with 288 tiles, about 2 blocks per
//     SM of an H100, too few to hide the loads. kFixedTargetBlocks blocks (about one full wave of
//     8 resident 256-thread blocks on a 128-SM-class GPU: a constant, not a device query) are
//     enough, so slices = ceil(kFixedTargetBlocks / tiles), at most the atomic twin's;
//   - every slice beyond the first costs m * n * 4 bytes written then read back (pass 2), where the
//     atomic twin sends the same bytes to L2 as atomic adds and zero-fills the output first. Fewer
//     slices than the twin (4 instead of 8 for that gradient: 19 MB of partials, within an H100's
//     50 MB L2) keeps that extra traffic at about half the atomics' and the block count near one
//     wave; that is the bet to check in `bench --device cuda`'s per-op table on a GPU.
// 1 slice runs pass 1 straight into the output (no scratch, no pass 2); 0: an empty reduction.
inline constexpr std::int64_t kFixedTargetBlocks = 1024;
inline int gemm_fixed_slices(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (k <= 0 || m <= 0 || n <= 0) return 0;
  const std::int64_t tiles =
      ra::ceil_div(m, std::int64_t(kGemmTile)) * ra::ceil_div(n, std::int64_t(kGemmTile));
  std::int64_t slices = ra::ceil_div(kFixedTargetBlocks, tiles);
  const int atomic = gemm_atomic_slices(k);
  if (slices > atomic) slices = atomic;
  return static_cast<int>(slices < 1 ? 1 : slices);
}

// The batch-invariant dense products (kernels/splitk_gemm.cuh: dense_forward_invariant,
// dense_data_grad_invariant): the same tiles and passes as dense_weight_grad_fixed, K (the
// sample's own reduced dimension: in for the forward pass, out for the data gradient) cut into
// fixed slices from K ALONE: ceil(k / kInvariantTermsPerSlice), at most kInvariantMaxSlices.
// Never from m (the batch) nor the device, so one sample's output is the same chain of slice
// partials, added in slice order, in a batch of 1 and of 128; gemm_fixed_slices, which targets a
// block count from m, would change a sample's sum with the batch size (cuBLAS's split-k does).
// Why slice at all: the Keras convnet's 9216 -> 128 forward pass has 4 tiles of 64 x 64 at batch
// 128 (2 at batch 1); one slice would leave 4 blocks walking 9216 terms each, 18 slices of 512
// give 72 blocks. Partials cost 18 x batch x 128 floats (1.2 MB at batch 128) written, read back.
inline constexpr std::int64_t kInvariantTermsPerSlice = 512;
inline constexpr int kInvariantMaxSlices = 32;
inline int gemm_invariant_slices(std::int64_t k) {
  if (k <= 0) return 0;
  const std::int64_t slices = ra::ceil_div(k, kInvariantTermsPerSlice);
  return static_cast<int>(slices < kInvariantMaxSlices ? slices : kInvariantMaxSlices);
}

// bias_backward's atomic grid: x over the slices, y over the channels (capped; blocks loop).
inline GridShape bias_atomic_grid(std::int64_t channels, int slices) {
  GridShape grid;
  grid.x = slices;
  grid.y = channels < kMaxGridYZ ? channels : kMaxGridYZ;
  grid.z = 1;
  return grid;
}

}  // namespace ra::kernels
