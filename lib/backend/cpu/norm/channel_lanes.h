#pragma once
// The per-plane loops of the per-channel ops (batch normalisation, global average pooling),
// written once for every instruction set. Included by channel_kernels.cpp (baseline x86-64) and
// channel_kernels_{avx2,avx512}.cpp inside their `#pragma GCC target` regions, each of which
// instantiates them with a tag type of its own anonymous namespace, so that every instantiation
// stays in its unit (an inline function compiled under two targets would be one symbol, and the
// linker would keep either).
//
// Every sum runs in kLanes = 16 interleaved float lanes (lane l adds the terms j = l mod 16 in
// order), then halves the lanes in a fixed tree (l + 8, l + 4, l + 2, l + 1). No term is fused
// (the build compiles with -ffp-contract=off), so every instruction set computes the same
// operations in the same order: the same bits at every instruction set, and a fixed order for a
// plane of a given size, whoever computes it. 16 lanes fill one AVX-512 register, two AVX2 ones.
#include <cstdint>

namespace ra::backend::cpu::channel_lanes {

inline constexpr std::int64_t kLanes = 16;

// The lanes' fixed tree: lane l + width added into lane l, width = 8, 4, 2, 1; lanes[0] is the sum.
// Each level written out: with constant trip counts the compiler unrolls them into one vector add
// each (a loop over the widths stayed a loop, through the stack, a cost a small plane feels).
template <class Tag>
inline float fold_lanes(float* lanes) {
  static_assert(kLanes == 16);
  for (std::int64_t l = 0; l < 8; ++l) lanes[l] += lanes[l + 8];
  for (std::int64_t l = 0; l < 4; ++l) lanes[l] += lanes[l + 4];
  for (std::int64_t l = 0; l < 2; ++l) lanes[l] += lanes[l + 2];
  return lanes[0] + lanes[1];
}

// The sum of term(j) for j in [0, count) in the lane order above.
template <class Tag, class Term>
inline float lane_sum(std::int64_t count, const Term& term) {
  float lanes[kLanes] = {};
  const std::int64_t whole = count - count % kLanes;
  for (std::int64_t j = 0; j < whole; j += kLanes) {
    for (std::int64_t l = 0; l < kLanes; ++l) lanes[l] += term(j + l);
  }
  for (std::int64_t j = whole; j < count; ++j) lanes[j - whole] += term(j);
  return fold_lanes<Tag>(lanes);
}

// lane_sum of two terms over the same j in one loop: each lane adds the same terms in the same
// order as two lane_sum calls would, so the same two sums (the second read of the plane was from
// L1, but its loop, its adds and its fold were a second time over).
template <class Tag, class First, class Second>
inline void lane_sums(std::int64_t count, const First& first, const Second& second,
                      float* first_sum, float* second_sum) {
  float a[kLanes] = {}, b[kLanes] = {};
  const std::int64_t whole = count - count % kLanes;
  for (std::int64_t j = 0; j < whole; j += kLanes) {
    for (std::int64_t l = 0; l < kLanes; ++l) {
      a[l] += first(j + l);
      b[l] += second(j + l);
    }
  }
  for (std::int64_t j = whole; j < count; ++j) {
    a[j - whole] += first(j);
    b[j - whole] += second(j);
  }
  *first_sum = fold_lanes<Tag>(a);
  *second_sum = fold_lanes<Tag>(b);
}

template <class Tag>
float sum(const float* x, std::int64_t count) {
  const float* __restrict in = x;
  return lane_sum<Tag>(count, [in](std::int64_t j) { return in[j]; });
}

// sum of two planes in one loop (lane_sums): each plane's sum as sum gives it, with twice the
// independent adds in flight (one plane's 16 lanes are two AVX2 add chains, which the adds'
// latency, not the loads, paced).
template <class Tag>
void sum_pair(const float* a, const float* b, std::int64_t count, float* sums) {
  const float* __restrict first = a;
  const float* __restrict second = b;
  lane_sums<Tag>(
      count, [first](std::int64_t j) { return first[j]; },
      [second](std::int64_t j) { return second[j]; }, sums, sums + 1);
}

template <class Tag>
float centered_square_sum(const float* x, std::int64_t count, float mean) {
  const float* __restrict in = x;
  return lane_sum<Tag>(count, [in, mean](std::int64_t j) {
    const float d = in[j] - mean;
    return d * d;
  });
}

// centered_square_sum of two planes in one loop, as sum_pair.
template <class Tag>
void centered_square_sum_pair(const float* a, const float* b, std::int64_t count, float mean_a,
                              float mean_b, float* sums) {
  const float* __restrict first = a;
  const float* __restrict second = b;
  lane_sums<Tag>(
      count,
      [first, mean_a](std::int64_t j) {
        const float d = first[j] - mean_a;
        return d * d;
      },
      [second, mean_b](std::int64_t j) {
        const float d = second[j] - mean_b;
        return d * d;
      },
      sums, sums + 1);
}

template <class Tag>
void centered_dot(const float* x, const float* dy, std::int64_t count, float mean, float* sum_dy,
                  float* sum_dy_centered) {
  const float* __restrict in = x;
  const float* __restrict grad = dy;
  lane_sums<Tag>(
      count, [grad](std::int64_t j) { return grad[j]; },
      [in, grad, mean](std::int64_t j) { return grad[j] * (in[j] - mean); }, sum_dy,
      sum_dy_centered);
}

// y = (x - shift) * scale + offset; x and y may alias (each element read before it is written).
template <class Tag>
void normalize(const float* x, std::int64_t count, float shift, float scale, float offset,
               float* y) {
  for (std::int64_t j = 0; j < count; ++j) y[j] = (x[j] - shift) * scale + offset;
}

// y = relu((x - shift) * scale + offset): normalize's value, then the relu of activation.h (the
// value where it is > 0, else +0); x and y may alias.
template <class Tag>
void normalize_relu(const float* x, std::int64_t count, float shift, float scale, float offset,
                    float* y) {
  for (std::int64_t j = 0; j < count; ++j) {
    const float v = (x[j] - shift) * scale + offset;
    y[j] = v > 0.0f ? v : 0.0f;
  }
}

// dx = (dy - mean_dy - (x - mean) * slope) * scale; dx may alias dy.
template <class Tag>
void normalize_backward(const float* x, const float* dy, std::int64_t count, float mean,
                        float mean_dy, float slope, float scale, float* dx) {
  for (std::int64_t j = 0; j < count; ++j) {
    dx[j] = (dy[j] - mean_dy - (x[j] - mean) * slope) * scale;
  }
}

// dx = (dy - mean_dy - (x - mean) * slope) * scale + addend: normalize_backward's value, then the
// residual add; dx may alias dy, not addend.
template <class Tag>
void normalize_backward_add(const float* x, const float* dy, std::int64_t count, float mean,
                            float mean_dy, float slope, float scale, const float* addend,
                            float* dx) {
  const float* __restrict in = addend;
  for (std::int64_t j = 0; j < count; ++j) {
    const float v = (dy[j] - mean_dy - (x[j] - mean) * slope) * scale;
    dx[j] = v + in[j];
  }
}

// The table of one instruction set's instantiations (channel_kernels.h).
template <class Tag, class Table>
constexpr Table table() {
  return Table{&sum<Tag>,
               &sum_pair<Tag>,
               &centered_square_sum<Tag>,
               &centered_square_sum_pair<Tag>,
               &centered_dot<Tag>,
               &normalize<Tag>,
               &normalize_relu<Tag>,
               &normalize_backward<Tag>,
               &normalize_backward_add<Tag>};
}

}  // namespace ra::backend::cpu::channel_lanes
