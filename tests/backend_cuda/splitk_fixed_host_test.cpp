// The deterministic dense weight gradient's fixed-order split (kernels/splitk_gemm.cuh,
// dense_weight_grad_fixed): its shape rule (kernels/reduction_split.h: gemm_fixed_slices) and its
// host twin (splitk_fixed_twin.h) against an independent naive computation in double. The kernel
// itself is checked against the twin's bits in kernels_gpu_test.cpp ([gpu]).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend_cuda/splitk_fixed_twin.h"
#include "kernels/reduction_split.h"

namespace {

namespace kernels = ra::kernels;

using splitk_twin::values;

}  // namespace

TEST_CASE("fixed split-k: slices from the sizes, at most the atomic twin's",
          "[cuda][host][split_plan]") {
  // The Keras MNIST convnet's weight gradients at batch 128: [128, 9216] has 2 x 144 = 288 tiles,
  // ceil(1024 / 288) = 4 slices; [10, 128] has 2 tiles and takes the atomic twin's 8.
  CHECK(kernels::gemm_fixed_slices(128, 9216, 128) == 4);
  CHECK(kernels::gemm_fixed_slices(10, 128, 128) == 8);
  CHECK(kernels::gemm_atomic_slices(128) == 8);
  // Enough tiles alone: one slice, written straight into dw.
  CHECK(kernels::gemm_fixed_slices(2048, 2048, 128) == 1);
  // Empty reductions or outputs: nothing to slice.
  CHECK(kernels::gemm_fixed_slices(10, 128, 0) == 0);
  CHECK(kernels::gemm_fixed_slices(0, 128, 128) == 0);
  for (const std::int64_t k : {1, 2, 3, 17, 128, 1000, 100000}) {
    for (const std::int64_t tiles_side : {1, 3, 40}) {
      const std::int64_t m = 64 * tiles_side, n = 64 * tiles_side + 5;
      const int slices = kernels::gemm_fixed_slices(m, n, k);
      INFO("m " << m << " n " << n << " k " << k << ": " << slices << " slices");
      REQUIRE(slices >= 1);
      REQUIRE(slices <= kernels::gemm_atomic_slices(k));
      REQUIRE(slices <= k);  // every slice holds a term
      for (int s = 0; s < slices; ++s) {
        REQUIRE(kernels::slice_begin(k, slices, s) < kernels::slice_begin(k, slices, s + 1));
      }
    }
  }
}

TEST_CASE("fixed split-k host twin agrees with the exact sum for any slice count",
          "[cuda][host][kernels]") {
  const int n = 37, in = 19, out = 5;
  const std::vector<float> x = values(std::size_t(n) * in, 1);
  const std::vector<float> dy = values(std::size_t(n) * out, 2);
  for (const int slices : {1, 2, 3, 8}) {
    const std::vector<float> dw = splitk_twin::dense_weight_grad_fixed(n, in, out, x, dy, slices);
    for (int o = 0; o < out; ++o) {
      for (int i = 0; i < in; ++i) {
        double exact = 0.0, magnitude = 0.0;
        for (int b = 0; b < n; ++b) {
          const double term = double(dy[std::size_t(b) * out + o]) * x[std::size_t(b) * in + i];
          exact += term;
          magnitude += std::fabs(term);
        }
        // n roundings of products and adds plus `slices` adds of partials, each <= 2^-24 of
        // the running magnitude: a bound of (2n + slices) 2^-24 sum |terms|.
        const double bound = (2.0 * n + slices) * std::ldexp(1.0, -24) * magnitude;
        INFO("slices " << slices << ", dw[" << o << ", " << i << "]");
        REQUIRE(std::fabs(dw[std::size_t(o) * in + i] - exact) <= bound);
      }
    }
  }
}
