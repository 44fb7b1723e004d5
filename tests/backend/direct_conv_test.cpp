// The direct convolutions against their im2col + gemm() twins (kept in im2col.h and gemm.h; the
// stride-1 backward data's twin is the forward convolution it computes): the same chains in the
// same order, so the bits must be identical -- for every GEMM
// variant this CPU runs, every conv case (1x1, strides, "same" padding, batch 1, lanes that are not
// a multiple of the vector width, more than one lane block), 1 and 3 threads. The twins also stay
// close to the naive reference (conv_test.cpp compares CpuOps with reference_ops).
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/activation.h"
#include "backend/cpu/conv/direct_conv.h"
#include "backend/cpu/conv/im2col.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/parallel_gemm.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend_test_util.h"
#include "core/thread_pool.h"

using namespace ra::backend;
using namespace ra::backend::cpu;

namespace {

std::vector<test::ConvCase> cases() {
  std::vector<test::ConvCase> all = test::conv_cases();
  all.push_back({"K 70, C 33: two lane blocks, ragged lanes, pad 1",
                 test::conv(2, 33, 7, 8, 70, 3, 3, 1, 1, 1, 1, 1, 1)});
  all.push_back({"Keras MNIST conv2 shape, batch 3", test::conv(3, 32, 26, 26, 64, 3, 3)});
  all.push_back(
      {"Keras MNIST conv1 shape (C 1, K 32), batch 2", test::conv(2, 1, 28, 28, 32, 3, 3)});
  all.push_back(
      {"5x5, K 16, stride (2,1), pad 2", test::conv(2, 6, 11, 9, 16, 5, 5, 2, 1, 2, 2, 2, 2)});
  all.push_back({"1 output pixel, K 5", test::conv(2, 4, 3, 3, 5, 3, 3)});
  // Padding at or beyond the kernel size: outputs whose window holds only padding, and a dy copy
  // shifted the other way in the direct backward data (R-1 - pad < 0).
  all.push_back(
      {"3x3, pad (3,4,3,2) >= kernel", test::conv(2, 3, 6, 7, 5, 3, 3, 1, 1, 3, 4, 3, 2)});
  all.push_back({"1x1, pad 1 > kernel", test::conv(2, 4, 5, 5, 6, 1, 1, 1, 1, 1, 1, 1, 1)});
  // Output rows of whole AVX2 vectors, whose tiles take row vectors (direct_conv_pixel.cpp): two
  // a row (ResNet29v2's 16 x 16), and three a row, so that a tile's two vectors span two rows and
  // the last tile has one.
  all.push_back(
      {"3x3 same on 16 x 16, K 13", test::conv(2, 5, 16, 16, 13, 3, 3, 1, 1, 1, 1, 1, 1)});
  all.push_back({"3x3 same on 5 x 24, K 7", test::conv(2, 4, 5, 24, 7, 3, 3, 1, 1, 1, 1, 1, 1)});
  // A 1x1 conv of ResNet29v2's stage 0, whose tiles read packed columns of 4 KiB planes.
  all.push_back({"1x1 on 32 x 32, C 16, K 20", test::conv(2, 16, 32, 32, 20, 1, 1)});
  // Dense stores over packed columns, whose whole columns a tile takes in one call: a block of 16
  // whole columns, then a last column of 8 lanes (12 x 22 = 264 positions); 4 x 6 = 24 positions,
  // one whole column and one of 8.
  all.push_back({"1x1 on 12 x 22, C 16, K 13", test::conv(2, 16, 12, 22, 13, 1, 1)});
  all.push_back({"1x1 on 4 x 6, C 3, K 7", test::conv(2, 3, 4, 6, 7, 1, 1)});
  // A filter gradient computed with its operands swapped (K >= 4 C), over uneven chunks.
  all.push_back({"1x1 on 9 x 7, C 5, K 21, batch 37", test::conv(37, 5, 9, 7, 21, 1, 1)});
  return all;
}

// The packing panels of the GEMM twin, as the backend allocates them (gemm.h: 64-byte aligned).
struct Twin {
  ScratchArena scratch{1};
  GemmBuffers buffers = gemm_buffers(scratch, 0);
};

// y_n = W col_n (+ bias afterwards), as the GEMM path computed it.
std::vector<float> gemm_forward(const ConvGeometry& g, const std::vector<float>& x,
                                const std::vector<float>& w, const std::vector<float>& bias,
                                Isa isa) {
  Twin twin;
  const std::int64_t crs = col_rows(g), pq = col_cols(g);
  std::vector<float> col(static_cast<std::size_t>(crs * pq)), y(g.y_size());
  for (std::int64_t n = 0; n < g.n; ++n) {
    im2col(g, x.data() + n * g.c * g.h * g.w, col.data());
    float* y_n = y.data() + n * g.k * pq;
    gemm(g.k, pq, crs, row_major(w.data(), crs), row_major(col.data(), pq), y_n, pq,
         GemmOutput::overwrite, twin.buffers, isa);
    for (std::int64_t k = 0; k < g.k; ++k) {
      for (std::int64_t j = 0; j < pq; ++j) y_n[k * pq + j] += bias[k];
    }
  }
  return y;
}

// dw = sum over the chunks of plan_chunks (in chunk order) of the chunk's images' GEMMs, each
// accumulated into the chunk's partial -- the deterministic reduction of the GEMM path.
std::vector<float> gemm_filter(const ConvGeometry& g, const std::vector<float>& x,
                               const std::vector<float>& dy, Isa isa) {
  Twin twin;
  const std::int64_t crs = col_rows(g), pq = col_cols(g), size = g.k * crs;
  const ChunkPlan plan = plan_chunks(g.n, size);
  std::vector<float> col(static_cast<std::size_t>(crs * pq)), dw(size, 0.0f), partial(size);
  for (std::int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
    std::fill(partial.begin(), partial.end(), 0.0f);
    for (std::int64_t n = plan.begin(chunk); n < plan.end(chunk); ++n) {
      im2col(g, x.data() + n * g.c * g.h * g.w, col.data());
      gemm(g.k, crs, pq, row_major(dy.data() + n * g.k * pq, pq), transpose_of(col.data(), pq),
           partial.data(), crs, GemmOutput::accumulate, twin.buffers, isa);
    }
    if (chunk == 0) {
      dw = partial;
    } else {
      for (std::int64_t i = 0; i < size; ++i) dw[i] += partial[i];
    }
  }
  return dw;
}

// The stride-1 backward data as a forward convolution: dy zero-padded by R-1 - pad, C filters
// of K channels, filter (c, k) = w[k][c] rotated by 180 degrees; dx_n = W' im2col(dy_n).
std::vector<float> gemm_data(const ConvGeometry& g, const std::vector<float>& dy,
                             const std::vector<float>& w, Isa isa) {
  ConvGeometry t = g;
  t.c = g.k;
  t.h = g.p;
  t.w = g.q;
  t.k = g.c;
  t.p = g.h;
  t.q = g.w;
  t.pad_top = g.r - 1 - g.pad_top;
  t.pad_left = g.s - 1 - g.pad_left;
  t.pad_bottom = g.r - 1 - g.pad_bottom;
  t.pad_right = g.s - 1 - g.pad_right;
  std::vector<float> flipped(w.size());
  for (int k = 0; k < g.k; ++k) {
    for (int c = 0; c < g.c; ++c) {
      for (int r = 0; r < g.r; ++r) {
        for (int s = 0; s < g.s; ++s) {
          flipped[((std::size_t(c) * g.k + k) * g.r + (g.r - 1 - r)) * g.s + (g.s - 1 - s)] =
              w[((std::size_t(k) * g.c + c) * g.r + r) * g.s + s];
        }
      }
    }
  }
  Twin twin;
  const std::int64_t crs = col_rows(t), pq = col_cols(t);
  std::vector<float> col(static_cast<std::size_t>(crs * pq)), dx(g.x_size());
  for (std::int64_t n = 0; n < g.n; ++n) {
    im2col(t, dy.data() + n * t.c * t.h * t.w, col.data());
    gemm(t.k, pq, crs, row_major(flipped.data(), crs), row_major(col.data(), pq),
         dx.data() + n * t.k * pq, pq, GemmOutput::overwrite, twin.buffers, isa);
  }
  return dx;
}

}  // namespace

TEST_CASE("direct convolutions give the bits of im2col + gemm for every variant and case",
          "[direct_conv]") {
  for (const Isa isa : test::supported_isas()) {
    for (const test::ConvCase& c : cases()) {
      const ConvGeometry& g = c.g;
      INFO(c.name << ", GEMM variant " << isa_name(isa));
      const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 11);
      const auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 12);
      const auto bias = test::random_values(static_cast<std::size_t>(g.k), 13);
      const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 14);
      const auto y_twin = gemm_forward(g, x, w, bias, isa);
      const auto dw_twin = gemm_filter(g, x, dy, isa);
      const auto dx_twin =
          g.stride_h == 1 && g.stride_w == 1 ? gemm_data(g, dy, w, isa) : std::vector<float>();
      for (const int threads : {1, 3}) {
        INFO(threads << " thread(s)");
        ra::ThreadPool pool(threads);
        ScratchArena scratch(threads);
        std::vector<float> y(g.y_size(), -7.0f), dw(g.w_size(), -7.0f), dx(g.x_size(), -7.0f);
        direct_conv_forward(pool, scratch, g, x.data(), w.data(), bias.data(),
                            ra::backend::Activation::none, y.data(), isa);
        REQUIRE(test::same_bits(y, y_twin));
        direct_conv_backward_filter(pool, scratch, g, x.data(), dy.data(), dw.data(), nullptr,
                                    ra::backend::KernelMode::deterministic, isa);
        REQUIRE(test::same_bits(dw, dw_twin));
        // Every stride-1 geometry takes the direct backward data, whatever its padding.
        REQUIRE(direct_backward_data_applies(g) == (g.stride_h == 1 && g.stride_w == 1));
        if (direct_backward_data_applies(g)) {
          direct_conv_backward_data(pool, scratch, g, dy.data(), w.data(), nullptr, dx.data(), isa);
          REQUIRE(test::same_bits(dx, dx_twin));
        }
      }
    }
  }
}

TEST_CASE("direct forward without bias is the chain alone, and zero padding keeps -0 rules",
          "[direct_conv]") {
  // No bias: y is the GEMM result itself. Inputs of -0 and a padded border exercise the one place
  // where adding a product of 0 changes bits (-0 + +0 = +0), which both paths must do alike.
  const ConvGeometry g = test::conv(2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  std::vector<float> x(static_cast<std::size_t>(g.x_size()), -0.0f);
  std::vector<float> w = test::random_values(static_cast<std::size_t>(g.w_size()), 21);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0.5f;
  const std::vector<float> zeros(static_cast<std::size_t>(g.k), 0.0f);
  for (const Isa isa : test::supported_isas()) {
    INFO(isa_name(isa));
    Twin twin;
    const std::int64_t crs = col_rows(g), pq = col_cols(g);
    std::vector<float> col(static_cast<std::size_t>(crs * pq)), expected(g.y_size());
    for (std::int64_t n = 0; n < g.n; ++n) {
      im2col(g, x.data() + n * g.c * g.h * g.w, col.data());
      gemm(g.k, pq, crs, row_major(w.data(), crs), row_major(col.data(), pq),
           expected.data() + n * g.k * pq, pq, GemmOutput::overwrite, twin.buffers, isa);
    }
    ra::ThreadPool pool(2);
    ScratchArena scratch(2);
    std::vector<float> y(g.y_size(), 1.0f);
    direct_conv_forward(pool, scratch, g, x.data(), w.data(), nullptr,
                        ra::backend::Activation::none, y.data(), isa);
    REQUIRE(test::same_bits(y, expected));
  }
}

TEST_CASE("nondeterministic direct filter gradient stays within rounding of the deterministic one",
          "[direct_conv]") {
  const ConvGeometry g = test::conv(37, 5, 9, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1);
  const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 31);
  const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 32);
  ra::ThreadPool pool(3);
  ScratchArena scratch(3);
  std::vector<float> det(g.w_size()), nondet(g.w_size());
  const Isa isa = active_isa();
  direct_conv_backward_filter(pool, scratch, g, x.data(), dy.data(), det.data(), nullptr,
                              ra::backend::KernelMode::deterministic, isa);
  direct_conv_backward_filter(pool, scratch, g, x.data(), dy.data(), nondet.data(), nullptr,
                              ra::backend::KernelMode::nondeterministic, isa);
  // Both are sums of the same products in different orders: within terms * u * sum |products|.
  std::vector<float> scale(g.w_size());
  const auto ax = test::abs_of(x), ady = test::abs_of(dy);
  direct_conv_backward_filter(pool, scratch, g, ax.data(), ady.data(), scale.data(), nullptr,
                              ra::backend::KernelMode::deterministic, isa);
  const std::int64_t terms = std::int64_t(g.n) * g.p * g.q;
  REQUIRE_CLOSE(nondet, det, 2 * test::sum_rtol(terms), 0.0, &scale);
}

TEST_CASE("strided 1x1 backward data gives the bits of gemm + col2im", "[direct_conv]") {
  // ResNet29v2's projection shape (scaled down) and odd sizes whose last row and column have no
  // output; values with zeros, so that col2im's +0 + (-0) is exercised; with and without the relu
  // gate it applies as it scatters.
  const std::vector<test::ConvCase> strided = {
      {"1x1 stride 2, 32 x 32, C 16, K 24", test::conv(2, 16, 32, 32, 24, 1, 1, 2, 2)},
      {"1x1 stride 2, 7 x 7", test::conv(2, 4, 7, 7, 3, 1, 1, 2, 2)},
      {"1x1 stride (3,2), 8 x 9", test::conv(3, 5, 8, 9, 6, 1, 1, 3, 2)},
  };
  for (const Isa isa : test::supported_isas()) {
    for (const test::ConvCase& c : strided) {
      const ConvGeometry& g = c.g;
      INFO(c.name << ", GEMM variant " << isa_name(isa));
      REQUIRE(is_subsampled_1x1(g));
      auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 21);
      for (std::size_t i = 0; i < dy.size(); i += 5) dy[i] = 0.0f;
      auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 22);
      for (std::size_t i = 0; i < w.size(); i += 7) w[i] = -0.0f;
      Twin twin;
      const std::int64_t crs = col_rows(g), pq = col_cols(g), chw = std::int64_t(g.c) * g.h * g.w;
      std::vector<float> dcol(static_cast<std::size_t>(crs * pq)), dx_twin(g.x_size());
      for (std::int64_t n = 0; n < g.n; ++n) {
        gemm(crs, pq, g.k, transpose_of(w.data(), crs), row_major(dy.data() + n * g.k * pq, pq),
             dcol.data(), pq, GemmOutput::overwrite, twin.buffers, isa);
        col2im(g, dcol.data(), dx_twin.data() + n * chw);
      }
      // With a relu gate (some of it zero or negative), the separate gate pass over the result.
      const auto gate = test::random_values(static_cast<std::size_t>(g.x_size()), 23);
      std::vector<float> gated_twin(g.x_size());
      ra::backend::cpu::relu_backward(gate.data(), dx_twin.data(), gated_twin.data(), g.x_size());
      for (const int threads : {1, 3}) {
        INFO(threads << " thread(s)");
        ra::ThreadPool pool(threads);
        ScratchArena scratch(threads);
        std::vector<float> dx(g.x_size(), -7.0f);
        subsampled_conv_backward_data(pool, scratch, g, dy.data(), w.data(), nullptr, dx.data(),
                                      isa);
        REQUIRE(test::same_bits(dx, dx_twin));
        std::fill(dx.begin(), dx.end(), -7.0f);
        subsampled_conv_backward_data(pool, scratch, g, dy.data(), w.data(), gate.data(), dx.data(),
                                      isa);
        REQUIRE(test::same_bits(dx, gated_twin));
      }
    }
  }
}
