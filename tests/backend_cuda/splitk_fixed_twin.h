#pragma once
// The host twin of kernels::dense_weight_grad_fixed (kernels/splitk_gemm.cuh): the same sums in
// the same order, so its bits are the kernel's. For each dw[o, i]: slice s's partial is 0.0f +
// dy[b, o] x[b, i] + ... for b in [slice_begin(s), slice_begin(s + 1)) in increasing b, each
// product rounded before it is added (--fmad=false on the device, -ffp-contract=off here); then
// dw = ((p0 + p1) + p2) + ... in slice order.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/reduction_split.h"

namespace splitk_twin {

// Operands for the twin and the kernel alike: a fixed LCG's values in [-1, 1), per seed.
inline std::vector<float> values(std::size_t size, std::uint32_t seed) {
  std::vector<float> v(size);
  std::uint32_t state = seed * 2654435761u + 7u;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;  // [-1, 1)
  }
  return v;
}

inline std::vector<float> dense_weight_grad_fixed(int n, int in, int out,
                                                  const std::vector<float>& x,
                                                  const std::vector<float>& dy, int slices) {
  std::vector<float> dw(std::size_t(out) * in, 0.0f);
  if (slices <= 0) return dw;
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i) {
      float sum = 0.0f;
      for (int s = 0; s < slices; ++s) {
        float partial = 0.0f;
        for (auto b = ra::kernels::slice_begin(n, slices, s);
             b < ra::kernels::slice_begin(n, slices, s + 1); ++b) {
          const float product = dy[std::size_t(b) * out + o] * x[std::size_t(b) * in + i];
          partial += product;
        }
        sum = s == 0 ? partial : sum + partial;
      }
      dw[std::size_t(o) * in + i] = sum;
    }
  }
  return dw;
}

}  // namespace splitk_twin
