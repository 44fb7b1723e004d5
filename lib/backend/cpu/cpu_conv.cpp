// conv2d on the CPU. The three products, as GEMMs over the column matrix of an image (im2col.h):
//   forward          y_n[K, PQ]    = W[K, CRS] col_n[CRS, PQ]          (+ bias[k] afterwards)
//   backward filter  dW[K, CRS]    = sum_n dY_n[K, PQ] col_n^T[PQ, CRS]  (reduced over the batch)
//   backward data    dcol[CRS, PQ] = W^T[CRS, K] dY_n[K, PQ], then dx_n = col2im(dcol)
//   backward bias    db[k]         = sum over n, p, q of dY[n, k, p, q]
// Forward, backward filter and the deterministic stride-1 backward data run as direct
// convolutions (direct_conv.h: the same chains, without building or packing col_n, which cost
// as much as the arithmetic for a 3x3 conv); strided backward data and the nondeterministic
// backward data run gemm() + col2im. Flops of the Keras MNIST conv 32->64 k3 on 26x26, batch
// 128: 2 * 64 * 288 * 576 * 128 = 2.7 GFLOP per direction.
#include <algorithm>
#include <limits>

#include "backend/cpu/activation.h"
#include "backend/cpu/conv/direct_conv.h"
#include "backend/cpu/conv/im2col.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm/parallel_gemm.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

using cpu::GemmOutput;
using cpu::row_major;
using cpu::transpose_of;

// The conditions of the CPU backend's fused paths, each stated once: the composite ops choose
// between fusing and their parts by the same tests the parts use.
// The conv forward and its pool in one pass (int32 argmax: a larger conv output takes two ops).
bool pools_in_conv(const ConvGeometry& g, const PoolGeometry& pool) {
  return cpu::fuses_maxpool(g, pool) && g.y_size() <= std::numeric_limits<std::int32_t>::max();
}
// Both reductions in the same mode and cutting the batch alike: db summed in dw's pass, with the
// bits of the two ops (tested).
bool filter_and_bias_in_one_pass(const ConvGeometry& g, KernelMode filter_mode,
                                 KernelMode bias_mode) {
  return filter_mode == bias_mode && cpu::fuses_bias_gradient(g);
}
// The direct backward data (stride 1, deterministic) rather than GEMM + col2im.
bool backward_data_is_direct(const ConvGeometry& g, KernelMode mode) {
  return mode != KernelMode::nondeterministic && cpu::direct_backward_data_applies(g);
}

std::int64_t image_size(const ConvGeometry& g) {
  return std::int64_t(g.c) * g.h * g.w;
}

// Tap parts of the nondeterministic backward data: 3, the fewest whose completion order can change
// the bits (two partials added into a zero output commute exactly: (0 + a) + b == (0 + b) + a);
// each part costs one more col2im-sized pass and one atomic pass over the image.
constexpr std::int64_t kTapParts = 3;

// Nondeterministic backward data for kernels of 3 or more taps: the sum over taps is the one
// that races. Images go in rounds of 2 per thread: first one task per image computes its whole
// dcol (the same GEMM as the deterministic path) into a shared slot and zeroes dx_n; then the
// task for (image, tap part) col2im's that part's taps (kTapParts contiguous ranges of r * S + s)
// into its own buffer and adds it into dx_n with atomic adds, in completion order. Against
// splitting the filters (4 GEMMs of K/4 and 4 full col2im per image) this does the deterministic
// work plus 3 partial col2im and atomic passes of C*H*W. Shared slots: 2 * threads * C*R*S * P*Q
// floats (Keras MNIST conv2: 288 * 576 floats = 0.66 MiB per image, 1.3 MiB per thread).
void backward_data_tap_split(ThreadPool& pool, cpu::ScratchArena& scratch, const ConvGeometry& g,
                             const float* dy, const float* w, float* dx) {
  const std::int64_t crs = cpu::col_rows(g), pq = cpu::col_cols(g), chw = image_size(g);
  const std::int64_t taps = std::int64_t(g.r) * g.s;
  const std::int64_t parts = std::min<std::int64_t>(kTapParts, taps);
  const std::int64_t col_floats = crs * pq;
  const std::int64_t round_images = std::min<std::int64_t>(g.n, 2 * pool.threads());
  float* dcols = scratch.shared(cpu::SharedBuffer::column_matrices,
                                static_cast<std::size_t>(round_images * col_floats));
  const auto image_floats = static_cast<std::size_t>(chw);
  cpu::reserve_gemm_buffers(scratch);
  scratch.reserve_workers(cpu::WorkerBuffer::partial, image_floats);
  for (std::int64_t n0 = 0; n0 < g.n; n0 += round_images) {
    const std::int64_t images = std::min(round_images, g.n - n0);
    cpu::parallel_for(pool, images, [&](std::int64_t i, int worker) {
      std::fill_n(dx + (n0 + i) * chw, chw, 0.0f);
      cpu::gemm(crs, pq, g.k, transpose_of(w, crs), row_major(dy + (n0 + i) * g.k * pq, pq),
                dcols + i * col_floats, pq, GemmOutput::overwrite,
                cpu::gemm_buffers(scratch, worker));
    });
    // Image-major: the parts of one image are taken by different workers at the same time.
    cpu::parallel_for(pool, images * parts, [&](std::int64_t task, int worker) {
      const std::int64_t i = task / parts, part = task % parts;
      float* share = scratch.worker(worker, cpu::WorkerBuffer::partial, image_floats);
      cpu::col2im_taps(g, dcols + i * col_floats, part * taps / parts, (part + 1) * taps / parts,
                       share);
      cpu::atomic_add(dx + (n0 + i) * chw, share, chw);
    });
  }
}

}  // namespace

void CpuOps::conv2d_forward(const ConvGeometry& g, const float* x, const float* w,
                            const float* bias, Activation act, float* y) {
  cpu::direct_conv_forward(pool_, scratch_, g, x, w, bias, act, y, cpu::active_isa());
}

// The pools its direct convolution computes as it stores (the Keras 2x2/2): the conv output
// then never reaches memory. Other pools would run the two ops anyway.
bool CpuOps::fuses_conv_maxpool(const ConvGeometry& g, const PoolGeometry& pool) const {
  return pools_in_conv(g, pool);
}

void CpuOps::conv2d_forward_maxpool(const ConvGeometry& g, const float* x, const float* w,
                                    const float* bias, Activation act, const PoolGeometry& pool,
                                    float* conv_out, float* y, std::int32_t* argmax) {
  if (pools_in_conv(g, pool)) {
    cpu::direct_conv_forward_maxpool(pool_, scratch_, g, x, w, bias, act, pool, y, argmax,
                                     cpu::active_isa());
    return;
  }
  Ops::conv2d_forward_maxpool(g, x, w, bias, act, pool, conv_out, y, argmax);
}

void CpuOps::conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                    float* dw, KernelMode mode) {
  cpu::direct_conv_backward_filter(pool_, scratch_, g, x, dy, dw, nullptr, mode, cpu::active_isa());
}

void CpuOps::conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db,
                                  KernelMode mode) {
  cpu::conv_bias_gradient(pool_, scratch_, g, dy, db, mode);
}

void CpuOps::conv2d_backward_filter_bias(const ConvGeometry& g, const float* x, const float* dy,
                                         float* dw, float* db, KernelMode filter_mode,
                                         KernelMode bias_mode) {
  // db's planes are summed while dy is in cache for dw.
  if (filter_and_bias_in_one_pass(g, filter_mode, bias_mode)) {
    cpu::direct_conv_backward_filter(pool_, scratch_, g, x, dy, dw, db, filter_mode,
                                     cpu::active_isa());
    return;
  }
  conv2d_backward_filter(g, x, dy, dw, filter_mode);
  conv2d_backward_bias(g, dy, db, bias_mode);
}

void CpuOps::conv2d_backward_maxpool(const ConvGeometry& g, const PoolGeometry& pool,
                                     const MaxPoolGradient& pooled, const float* x, const float* w,
                                     const float* relu_gate, float* conv_dy, float* dx, float* dw,
                                     float* db, const ConvPoolBackwardModes& modes) {
  // Fused where every use of the conv output's gradient reads it an image at a time: the 2x2/2 pool
  // of the fused forward, the direct filter gradient (with db in the same pass) and the direct
  // backward data. Each image's gradient is then unpooled in the worker's cache for the filter
  // gradient and again for the data gradient, so the whole conv output gradient (128 x 64 x 24 x 24
  // floats, 18.9 MB per Keras MNIST step) is never written to memory nor read back by the two
  // passes. The maxpool backward reduces nothing (disjoint windows), so its mode does not matter.
  const bool filter_fuses =
      db == nullptr || filter_and_bias_in_one_pass(g, modes.filter, modes.bias);
  const bool data_fuses = dx == nullptr || backward_data_is_direct(g, modes.data);
  if (!pools_in_conv(g, pool) || !filter_fuses || !data_fuses) {
    Ops::conv2d_backward_maxpool(g, pool, pooled, x, w, relu_gate, conv_dy, dx, dw, db, modes);
    return;
  }
  const cpu::PooledGradient unpooled{pool, pooled};
  cpu::direct_conv_backward_filter(pool_, scratch_, g, x, nullptr, dw, db, modes.filter,
                                   cpu::active_isa(), &unpooled);
  if (dx != nullptr) {
    cpu::direct_conv_backward_data(pool_, scratch_, g, nullptr, w, relu_gate, dx, cpu::active_isa(),
                                   &unpooled);
  }
}

void CpuOps::conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w,
                                  const float* relu_gate, float* dx, KernelMode mode) {
  if (backward_data_is_direct(g, mode)) {
    // The gate is applied as each band of dx is stored.
    cpu::direct_conv_backward_data(pool_, scratch_, g, dy, w, relu_gate, dx, cpu::active_isa());
    return;
  }
  if (mode != KernelMode::nondeterministic && cpu::is_subsampled_1x1(g)) {
    // The gate is applied to each row as its values are scattered.
    cpu::subsampled_conv_backward_data(pool_, scratch_, g, dy, w, relu_gate, dx, cpu::active_isa());
    return;
  }
  conv2d_backward_data_gemm(g, dy, w, dx, mode);
  if (relu_gate == nullptr) return;
  // GEMM + col2im paths: the gate as a pass of its own, as the separate relu backward did.
  const std::int64_t count = g.x_size();
  cpu::parallel_for(pool_, cpu::block_count(count), [&](std::int64_t block, int) {
    const std::int64_t begin = block * cpu::kElementBlock;
    const std::int64_t end = std::min(count, begin + cpu::kElementBlock);
    cpu::relu_backward(relu_gate + begin, dx + begin, dx + begin, end - begin);
  });
}

// The GEMM + col2im backward data (strided geometries, and the nondeterministic mode).
void CpuOps::conv2d_backward_data_gemm(const ConvGeometry& g, const float* dy, const float* w,
                                       float* dx, KernelMode mode) {
  const std::int64_t crs = cpu::col_rows(g), pq = cpu::col_cols(g), chw = image_size(g);
  const bool identity = cpu::im2col_is_identity(g);
  const auto col_floats = static_cast<std::size_t>(crs * pq);
  const auto image_floats = static_cast<std::size_t>(chw);

  if (mode != KernelMode::nondeterministic) {
    // Strided: one task per image: the GEMM sums over filters k ascending, col2im over taps in a
    // fixed order.
    cpu::reserve_gemm_buffers(scratch_);
    if (!identity) scratch_.reserve_workers(cpu::WorkerBuffer::column_matrix, col_floats);
    cpu::parallel_for(pool_, g.n, [&](std::int64_t n, int worker) {
      float* dx_n = dx + n * chw;
      float* dcol =
          identity ? dx_n : scratch_.worker(worker, cpu::WorkerBuffer::column_matrix, col_floats);
      cpu::gemm(crs, pq, g.k, transpose_of(w, crs), row_major(dy + n * g.k * pq, pq), dcol, pq,
                GemmOutput::overwrite, cpu::gemm_buffers(scratch_, worker));
      if (!identity) cpu::col2im(g, dcol, dx_n);
    });
    return;
  }

  const std::int64_t taps = std::int64_t(g.r) * g.s;
  if (!identity && taps >= 3) {
    backward_data_tap_split(pool_, scratch_, g, dy, w, dx);
    return;
  }
  // Nondeterministic, kernels of 1 or 2 taps (or the identity 1x1): the filters are split into up
  // to kSplitKParts groups; the task for (image, group) computes that group's share of dx_n in its
  // own buffer and adds it with atomic adds. (Each group needs its own GEMM and col2im: 4x the
  // col2im work.)
  cpu::parallel_for(pool_, g.n, [&](std::int64_t n, int) { std::fill_n(dx + n * chw, chw, 0.0f); });
  const std::int64_t group = std::max<std::int64_t>(1, ceil_div(g.k, cpu::kSplitKParts));
  const std::int64_t groups = ceil_div(g.k, group);
  cpu::reserve_gemm_buffers(scratch_);
  scratch_.reserve_workers(cpu::WorkerBuffer::column_matrix, col_floats);
  if (!identity) {
    scratch_.reserve_workers(cpu::WorkerBuffer::partial, image_floats);
  }
  cpu::parallel_for(pool_, g.n * groups, [&](std::int64_t task, int worker) {
    const std::int64_t n = task / groups, k0 = (task % groups) * group;
    const std::int64_t filters = std::min(group, g.k - k0);
    float* dcol = scratch_.worker(worker, cpu::WorkerBuffer::column_matrix, col_floats);
    cpu::gemm(crs, pq, filters, transpose_of(w, crs).shifted(0, k0),
              row_major(dy + n * g.k * pq, pq).shifted(k0, 0), dcol, pq, GemmOutput::overwrite,
              cpu::gemm_buffers(scratch_, worker));
    const float* share = dcol;
    if (!identity) {
      float* image = scratch_.worker(worker, cpu::WorkerBuffer::partial, image_floats);
      cpu::col2im(g, dcol, image);
      share = image;
    }
    cpu::atomic_add(dx + n * chw, share, chw);
  });
}

}  // namespace ra::backend::cpu
