// The GEMM building blocks: bitwise equality with the naive float loop in the documented order
// (the property all determinism rests on), for every operand layout, blocking boundary and
// thread count; and the im2col/col2im pair against their definitions.
#include <catch2/catch.hpp>

#include "backend/cpu/gemm.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/parallel_gemm.h"
#include "backend/cpu/reduction.h"
#include "backend/cpu/scratch.h"
#include "backend_test_util.h"

using namespace ra::backend::cpu;

namespace {

// c = c0 + sum_p a(i,p) b(p,j), one float running sum per element, p ascending: the order gemm.h
// promises (products rounded before each add, as -ffp-contract=off guarantees in this file too).
void naive_gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                float* c, std::int64_t ldc, GemmOutput output) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float sum = output == GemmOutput::accumulate ? c[i * ldc + j] : 0.0f;
      for (std::int64_t p = 0; p < k; ++p) sum += a(i, p) * b(p, j);
      c[i * ldc + j] = sum;
    }
}

struct Shape {
  std::int64_t m, n, k;
};

}  // namespace

TEST_CASE("gemm equals the naive loop bit for bit", "[backend][gemm]") {
  const Shape shapes[] = {{1, 1, 1},    {3, 5, 7},      {4, 8, 256},  {5, 9, 257},
                          {129, 17, 3}, {33, 1030, 20}, {7, 13, 600}, {2, 3, 0}};
  ScratchArena scratch(1);
  const GemmBuffers buffers{scratch.worker(0, WorkerBuffer::gemm_pack_a, kGemmPackAFloats),
                            scratch.worker(0, WorkerBuffer::gemm_pack_b, kGemmPackBFloats)};
  for (const Shape& s : shapes) {
    const auto a_data = test::random_values(std::size_t(s.m * s.k) + 1, 1);
    const auto b_data = test::random_values(std::size_t(s.k * s.n) + 1, 2);
    const auto c0 = test::random_values(std::size_t(s.m * (s.n + 3)), 3);
    for (const bool a_transposed : {false, true}) {
      for (const bool b_transposed : {false, true}) {
        for (const GemmOutput output : {GemmOutput::overwrite, GemmOutput::accumulate}) {
          INFO("m " << s.m << " n " << s.n << " k " << s.k << " A^T " << a_transposed << " B^T "
                    << b_transposed << " accumulate " << (output == GemmOutput::accumulate));
          const MatrixView a =
              a_transposed ? transpose_of(a_data.data(), s.m) : row_major(a_data.data(), s.k);
          const MatrixView b =
              b_transposed ? transpose_of(b_data.data(), s.k) : row_major(b_data.data(), s.n);
          // ldc = n + 3: C is a submatrix of a wider array; the 3 extra columns must stay intact.
          std::vector<float> c = c0, expected = c0;
          gemm(s.m, s.n, s.k, a, b, c.data(), s.n + 3, output, buffers);
          naive_gemm(s.m, s.n, s.k, a, b, expected.data(), s.n + 3, output);
          REQUIRE(test::same_bits(c, expected));
        }
      }
    }
  }
}

TEST_CASE("parallel gemm is bitwise independent of the thread count", "[backend][gemm]") {
  const std::int64_t m = 70, n = 600, k = 300;
  const auto a = test::random_values(std::size_t(m * k), 4);
  const auto b = test::random_values(std::size_t(k * n), 5);
  std::vector<float> expected(std::size_t(m * n));
  naive_gemm(m, n, k, row_major(a.data(), k), row_major(b.data(), n), expected.data(), n,
             GemmOutput::overwrite);
  std::vector<float> scale(expected.size());
  const auto aa = test::abs_of(a), ab = test::abs_of(b);
  naive_gemm(m, n, k, row_major(aa.data(), k), row_major(ab.data(), n), scale.data(), n,
             GemmOutput::overwrite);
  for (int threads : {1, 2, 3, 7}) {
    INFO(threads << " threads");
    ra::ThreadPool pool(threads);
    ScratchArena scratch(threads);
    std::vector<float> c(expected.size(), -1.0f);
    parallel_gemm(pool, scratch, m, n, k, row_major(a.data(), k), row_major(b.data(), n), c.data(),
                  n, GemmOutput::overwrite);
    REQUIRE(test::same_bits(c, expected));
    // Split-k with atomic adds: another summation tree, the same value within rounding.
    std::vector<float> split(expected.size(), -1.0f);
    parallel_gemm_split_k_atomic(pool, scratch, m, n, k, row_major(a.data(), k),
                                 row_major(b.data(), n), split.data(), n);
    REQUIRE_CLOSE(split, expected, test::sum_rtol(k), 0.0, &scale);
  }
}

TEST_CASE("reduction chunks depend on the data sizes only", "[backend][gemm]") {
  // 128 images of the MNIST conv 32->64 gradient: 32 chunks of 4.
  const ChunkPlan mnist = plan_chunks(128, 64 * 32 * 9);
  REQUIRE((mnist.chunks == 32 && mnist.per_chunk == 4));
  // 37 items: 32 wanted -> 2 per chunk -> 19 chunks, the last one with a single item.
  const ChunkPlan odd = plan_chunks(37, 10);
  REQUIRE((odd.chunks == 19 && odd.per_chunk == 2 && odd.begin(18) == 36 && odd.end(18) == 37));
  // Huge partials: the 16 MiB budget limits the chunk count (2^22 / 2^20 = 4 chunks).
  const ChunkPlan big = plan_chunks(100, std::int64_t(1) << 20);
  REQUIRE((big.chunks == 4 && big.per_chunk == 25));
  REQUIRE(plan_chunks(5, std::int64_t(1) << 30).chunks == 1);
  REQUIRE(plan_chunks(0, 10).chunks == 0);
}

TEST_CASE("im2col and col2im follow their definitions", "[backend][gemm]") {
  const auto g = test::conv(1, 3, 7, 6, 2, 3, 2, 2, 1, 1, 0, 1, 1);  // stride (2,1), pads t1 b1 r1
  const auto x = test::random_values(g.x_size(), 6);
  std::vector<float> col(std::size_t(col_rows(g) * col_cols(g)), -1.0f);
  im2col(g, x.data(), col.data());
  const auto cols = test::random_values(col.size(), 7);
  std::vector<double> adjoint(x.size(), 0.0);  // col2im is the adjoint (transpose) of im2col
  for (int c = 0; c < g.c; ++c)
    for (int r = 0; r < g.r; ++r)
      for (int s = 0; s < g.s; ++s)
        for (int p = 0; p < g.p; ++p)
          for (int q = 0; q < g.q; ++q) {
            const int ih = p * g.stride_h - g.pad_top + r, iw = q * g.stride_w - g.pad_left + s;
            const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
            const std::size_t row = std::size_t((c * g.r + r) * g.s + s);
            const std::size_t at = row * col_cols(g) + std::size_t(p * g.q + q);
            REQUIRE(col[at] == (inside ? x[std::size_t((c * g.h + ih) * g.w + iw)] : 0.0f));
            if (inside) adjoint[std::size_t((c * g.h + ih) * g.w + iw)] += cols[at];
          }
  std::vector<float> dx(x.size(), -1.0f);
  col2im(g, cols.data(), dx.data());
  // At most R*S = 6 float additions per element: 8u relative to the sum of magnitudes (<= 6).
  for (std::size_t i = 0; i < dx.size(); ++i)
    REQUIRE(std::abs(dx[i] - adjoint[i]) <= 6 * 8 * test::kUnitRoundoff);
  REQUIRE_FALSE(im2col_is_identity(g));
  REQUIRE(im2col_is_identity(test::conv(2, 3, 5, 5, 4, 1, 1)));
}
