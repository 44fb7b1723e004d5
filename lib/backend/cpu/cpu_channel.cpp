// Per-channel ops: batch normalisation (training, inference, backward) and global average
// pooling. x[N,C,H,W] is N*C planes
// of H*W floats (backend/geometry.h: ChannelGeometry); the per-plane loops are norm/'s kernels.
//
// Channel sums (the mean, the centred squares, the backward's two sums): each plane's sum is
// computed whole by one task, in the fixed lane order of norm/channel_lanes.h. Then
//   deterministic (and autotune, batch_invariant): the planes' sums are kept, one per plane, and
//     each channel adds its N in image order, in double: a tree fixed by the sizes, so the same
//     bits for any thread count (and, the kernels being the same operations, any instruction set);
//   nondeterministic: each task adds its planes' sums into the channel's float accumulator with
//     atomic adds, in completion order: bits may vary from run to run with more than one thread.
// The per-channel scalars (mean, inverse std, the backward's coefficients) are computed in double
// from those sums and rounded once to float; the elementwise passes are one writer per element.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/norm/channel_kernels.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/parallel_for.h"
#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

// body(begin, end) for the planes [begin, end) of each task of about kElementBlock floats (at
// least one plane).
template <class Body>
void for_plane_runs(ThreadPool& pool, const ChannelGeometry& g, const Body& body) {
  const std::int64_t per_task =
      std::max<std::int64_t>(1, kElementBlock / std::max<std::int64_t>(1, g.spatial()));
  const std::int64_t planes = g.planes();
  parallel_for(pool, ceil_div(planes, per_task), [&](std::int64_t task, int) {
    body(task * per_task, std::min(planes, (task + 1) * per_task));
  });
}

// body(plane) for every plane, in for_plane_runs' tasks.
template <class Body>
void for_planes(ThreadPool& pool, const ChannelGeometry& g, const Body& body) {
  for_plane_runs(pool, g, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t plane = begin; plane < end; ++plane) body(plane);
  });
}

}  // namespace

template <class PlaneSums>
void CpuOps::channel_sums(const ChannelGeometry& g, KernelMode mode, int width,
                          const PlaneSums& plane_sums) {
  if (mode == KernelMode::nondeterministic) {
    const std::int64_t size = std::int64_t(g.c) * width;
    float* accumulators = scratch_.shared(SharedBuffer::chunk_partials, std::size_t(size));
    std::fill_n(accumulators, size, 0.0f);
    for_planes(pool_, g, [&](std::int64_t plane) {
      float values[2];
      plane_sums(plane, values);
      const std::int64_t channel = plane % g.c;
      for (int v = 0; v < width; ++v) atomic_add(accumulators + channel * width + v, values[v]);
    });
    channel_sums_.assign(accumulators, accumulators + size);
    return;
  }
  float* partials = scratch_.shared(SharedBuffer::chunk_partials, std::size_t(g.planes() * width));
  for_planes(pool_, g, [&](std::int64_t plane) { plane_sums(plane, partials + plane * width); });
  reduce_planes(g, width, partials);
}

template <class PlaneSums, class PairSums>
void CpuOps::paired_channel_sums(const ChannelGeometry& g, KernelMode mode,
                                 const PlaneSums& plane_sums, const PairSums& pair_sums) {
  if (mode == KernelMode::nondeterministic) {
    channel_sums(g, mode, 1, plane_sums);
    return;
  }
  float* partials = scratch_.shared(SharedBuffer::chunk_partials, std::size_t(g.planes()));
  for_plane_runs(pool_, g, [&](std::int64_t begin, std::int64_t end) {
    std::int64_t plane = begin;
    for (; plane + 1 < end; plane += 2) pair_sums(plane, partials + plane);
    if (plane < end) plane_sums(plane, partials + plane);
  });
  reduce_planes(g, 1, partials);
}

// channel_sums_[c * width + v] = the sum of the planes' partials of channel c, image by image (the
// deterministic tree: the same for any thread count).
void CpuOps::reduce_planes(const ChannelGeometry& g, int width, const float* partials) {
  const std::int64_t size = std::int64_t(g.c) * width;
  channel_sums_.assign(static_cast<std::size_t>(size), 0.0);
  for (std::int64_t n = 0; n < g.n; ++n) {
    for (std::int64_t i = 0; i < size; ++i) channel_sums_[i] += partials[n * size + i];
  }
}

void CpuOps::batchnorm_forward_training(const ChannelGeometry& g, const float* x,
                                        const float* gamma, const float* beta, float momentum,
                                        float epsilon, float* running_mean, float* running_var,
                                        float* saved_mean, float* saved_inv_std, float* y,
                                        KernelMode mode) {
  batchnorm_training(g, x, gamma, beta, momentum, epsilon, running_mean, running_var, saved_mean,
                     saved_inv_std, false, y, mode);
}

void CpuOps::batchnorm_forward_training_activation(
    const ChannelGeometry& g, const float* x, const float* gamma, const float* beta, float momentum,
    float epsilon, float* running_mean, float* running_var, float* saved_mean, float* saved_inv_std,
    Activation act, float* bn_out, float* y, KernelMode mode) {
  // relu's pass over y (a read and a write of the whole tensor) folded into the normalisation's
  // store: the same float operations (channel_lanes.h), so the bits of the two ops.
  if (act != Activation::none && act != Activation::relu) {
    Ops::batchnorm_forward_training_activation(g, x, gamma, beta, momentum, epsilon, running_mean,
                                               running_var, saved_mean, saved_inv_std, act, bn_out,
                                               y, mode);
    return;
  }
  batchnorm_training(g, x, gamma, beta, momentum, epsilon, running_mean, running_var, saved_mean,
                     saved_inv_std, act == Activation::relu, y, mode);
}

void CpuOps::batchnorm_training(const ChannelGeometry& g, const float* x, const float* gamma,
                                const float* beta, float momentum, float epsilon,
                                float* running_mean, float* running_var, float* saved_mean,
                                float* saved_inv_std, bool relu, float* y, KernelMode mode) {
  const ChannelKernels& k = channel_kernels();
  const std::int64_t hw = g.spatial();
  const double m = double(g.n) * double(hw);
  // Two planes at a time where a task has two (sum_pair: each plane's bits as sum's).
  paired_channel_sums(
      g, mode, [&](std::int64_t plane, float* out) { *out = k.sum(x + plane * hw, hw); },
      [&](std::int64_t plane, float* out) {
        k.sum_pair(x + plane * hw, x + (plane + 1) * hw, hw, out);
      });
  for (int c = 0; c < g.c; ++c) saved_mean[c] = float(channel_sums_[c] / m);
  paired_channel_sums(
      g, mode,
      [&](std::int64_t plane, float* out) {
        *out = k.centered_square_sum(x + plane * hw, hw, saved_mean[plane % g.c]);
      },
      [&](std::int64_t plane, float* out) {
        k.centered_square_sum_pair(x + plane * hw, x + (plane + 1) * hw, hw,
                                   saved_mean[plane % g.c], saved_mean[(plane + 1) % g.c], out);
      });
  for (int c = 0; c < g.c; ++c) {
    const double var = channel_sums_[c] / m;
    saved_inv_std[c] = float(1.0 / std::sqrt(var + double(epsilon)));
    const double unbiased = m > 1 ? var * m / (m - 1) : var;
    running_mean[c] = float((1.0 - momentum) * running_mean[c] + double(momentum) * saved_mean[c]);
    running_var[c] = float((1.0 - momentum) * running_var[c] + double(momentum) * unbiased);
  }
  const auto normalize = relu ? k.normalize_relu : k.normalize;
  for_planes(pool_, g, [&](std::int64_t plane) {
    const std::int64_t c = plane % g.c;
    normalize(x + plane * hw, hw, saved_mean[c], saved_inv_std[c] * gamma[c], beta[c],
              y + plane * hw);
  });
}

void CpuOps::batchnorm_forward_inference(const ChannelGeometry& g, const float* x,
                                         const float* gamma, const float* beta,
                                         const float* running_mean, const float* running_var,
                                         float epsilon, float* y) {
  const ChannelKernels& k = channel_kernels();
  const std::int64_t hw = g.spatial();
  for_planes(pool_, g, [&](std::int64_t plane) {
    const std::int64_t c = plane % g.c;
    const auto scale = float(double(gamma[c]) / std::sqrt(double(running_var[c]) + epsilon));
    k.normalize(x + plane * hw, hw, running_mean[c], scale, beta[c], y + plane * hw);
  });
}

void CpuOps::batchnorm_backward(const ChannelGeometry& g, const float* x, const float* dy,
                                const float* gamma, const float* saved_mean,
                                const float* saved_inv_std, float* dx, float* dgamma, float* dbeta,
                                KernelMode mode) {
  batchnorm_backward_add(g, x, dy, gamma, saved_mean, saved_inv_std, nullptr, dx, dgamma, dbeta,
                         mode);
}

// With an addend, the residual add in the pass that stores dx: one read of the addend instead of
// a pass of its own (reading dx and the addend, writing dx again).
void CpuOps::batchnorm_backward_add(const ChannelGeometry& g, const float* x, const float* dy,
                                    const float* gamma, const float* saved_mean,
                                    const float* saved_inv_std, const float* addend, float* dx,
                                    float* dgamma, float* dbeta, KernelMode mode) {
  const ChannelKernels& k = channel_kernels();
  const std::int64_t hw = g.spatial();
  const double m = double(g.n) * double(hw);
  channel_sums(g, mode, 2, [&](std::int64_t plane, float* out) {
    k.centered_dot(x + plane * hw, dy + plane * hw, hw, saved_mean[plane % g.c], out, out + 1);
  });
  // Per channel: mean_dy, slope = inv_std^2 sum dy (x - mean) / m, scale = gamma inv_std.
  std::vector<float>& coefficients = channel_coefficients_;
  coefficients.resize(std::size_t(g.c) * 3);
  for (int c = 0; c < g.c; ++c) {
    const double inv_std = saved_inv_std[c], sum_dy = channel_sums_[2 * c],
                 sum_dy_centered = channel_sums_[2 * c + 1];
    dbeta[c] = float(sum_dy);
    dgamma[c] = float(inv_std * sum_dy_centered);
    coefficients[3 * c] = float(sum_dy / m);
    coefficients[3 * c + 1] = float(inv_std * inv_std * sum_dy_centered / m);
    coefficients[3 * c + 2] = float(double(gamma[c]) * inv_std);
  }
  for_planes(pool_, g, [&](std::int64_t plane) {
    const std::int64_t c = plane % g.c, at = plane * hw;
    const float* coefficient = coefficients.data() + 3 * c;
    if (addend == nullptr) {
      k.normalize_backward(x + at, dy + at, hw, saved_mean[c], coefficient[0], coefficient[1],
                           coefficient[2], dx + at);
    } else {
      k.normalize_backward_add(x + at, dy + at, hw, saved_mean[c], coefficient[0], coefficient[1],
                               coefficient[2], addend + at, dx + at);
    }
  });
}

void CpuOps::global_avgpool_forward(const ChannelGeometry& g, const float* x, float* y) {
  const ChannelKernels& k = channel_kernels();
  const std::int64_t hw = g.spatial();
  const auto count = float(hw);
  for_planes(pool_, g, [&](std::int64_t plane) { y[plane] = k.sum(x + plane * hw, hw) / count; });
}

void CpuOps::global_avgpool_backward(const ChannelGeometry& g, const float* dy, float* dx) {
  const std::int64_t hw = g.spatial();
  const auto count = float(hw);
  for_planes(pool_, g,
             [&](std::int64_t plane) { std::fill_n(dx + plane * hw, hw, dy[plane] / count); });
}

}  // namespace ra::backend::cpu
