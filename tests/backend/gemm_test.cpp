// The GEMM building blocks: for every kernel variant this CPU runs, bitwise equality with the
// naive loop in the order the variant documents (the property all determinism rests on), for
// every operand layout, blocking boundary and thread count; and the im2col/col2im pair against
// their definitions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/conv/im2col.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/parallel_gemm.h"
#include "backend/cpu/reduce/reduction.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend_test_util.h"
#include "core/error.h"

using namespace ra::backend::cpu;

namespace {

// c = c0 + sum_p a(i,p) b(p,j), one float running sum per element, p ascending: the order gemm.h
// promises. Portable: product rounded, then the add (-ffp-contract=off holds in this file too);
// the FMA variants: c = fma(a, b, c), one rounding per step.
void naive_gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixView a, MatrixView b,
                float* c, std::int64_t ldc, GemmOutput output, Isa isa) {
  const bool fused = isa != Isa::portable;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float sum = output == GemmOutput::accumulate ? c[i * ldc + j] : 0.0f;
      for (std::int64_t p = 0; p < k; ++p) {
        sum = fused ? std::fma(a(i, p), b(p, j), sum) : sum + a(i, p) * b(p, j);
      }
      c[i * ldc + j] = sum;
    }
}

struct Shape {
  std::int64_t m, n, k;
};

}  // namespace

TEST_CASE("every gemm variant equals its naive loop bit for bit", "[backend][gemm]") {
  // Edges of every register tile (portable 4x8, avx2 6x16, avx512 8x48) and cache block (KC 192
  // and 256, MC 126 and 128, NC 1008 and 1024), 1x1, an empty k, and the MNIST conv/dense
  // layouts in miniature (the transposes below cover w^T, col^T, dy^T).
  const Shape shapes[] = {{1, 1, 1},     {3, 5, 7},      {4, 8, 256},    {5, 9, 257},
                          {129, 17, 3},  {33, 1030, 20}, {7, 13, 600},   {2, 3, 0},
                          {8, 48, 193},  {9, 49, 385},   {6, 16, 1},     {13, 47, 70},
                          {127, 95, 33}, {17, 1010, 9},  {64, 100, 145}, {16, 96, 64}};
  ScratchArena scratch(1);
  const GemmBuffers buffers = gemm_buffers(scratch, 0);
  for (const Isa isa : test::supported_isas()) {
    for (const Shape& s : shapes) {
      const auto a_data = test::random_values(std::size_t(s.m * s.k) + 1, 1);
      const auto b_data = test::random_values(std::size_t(s.k * s.n) + 1, 2);
      const auto c0 = test::random_values(std::size_t(s.m * (s.n + 3)), 3);
      for (const bool a_transposed : {false, true}) {
        for (const bool b_transposed : {false, true}) {
          for (const GemmOutput output : {GemmOutput::overwrite, GemmOutput::accumulate}) {
            INFO(isa_name(isa) << " m " << s.m << " n " << s.n << " k " << s.k << " A^T "
                               << a_transposed << " B^T " << b_transposed << " accumulate "
                               << (output == GemmOutput::accumulate));
            const MatrixView a =
                a_transposed ? transpose_of(a_data.data(), s.m) : row_major(a_data.data(), s.k);
            const MatrixView b =
                b_transposed ? transpose_of(b_data.data(), s.k) : row_major(b_data.data(), s.n);
            // ldc = n + 3: C is a submatrix of a wider array; the 3 extra columns must stay intact.
            std::vector<float> c = c0, expected = c0;
            gemm(s.m, s.n, s.k, a, b, c.data(), s.n + 3, output, buffers, isa);
            naive_gemm(s.m, s.n, s.k, a, b, expected.data(), s.n + 3, output, isa);
            REQUIRE(test::same_bits(c, expected));
          }
        }
      }
    }
  }
}

TEST_CASE("gemm variants round as documented: a hand-computed case", "[backend][gemm]") {
  // a = b = 1 + 2^-12, c0 = -(1 + 2^-11). Exactly, a*b + c0 = 2^-24. Portable rounds the product
  // first: 1 + 2^-11 + 2^-24 is a tie at 1 (ulp 2^-23) and goes to the even 1 + 2^-11, so the sum
  // is 0. FMA rounds once: 2^-24. A whole 8 x 48 C (one avx512 tile, whole avx2 and portable
  // tiles) takes every variant's vector path.
  const std::int64_t m = 8, n = 48;
  const float one_plus = 1.0f + std::ldexp(1.0f, -12);
  const std::vector<float> a(m, one_plus), b(n, one_plus);
  ScratchArena scratch(1);
  for (const Isa isa : test::supported_isas()) {
    INFO(isa_name(isa));
    std::vector<float> c(std::size_t(m * n), -(1.0f + std::ldexp(1.0f, -11)));
    gemm(m, n, 1, row_major(a.data(), 1), row_major(b.data(), n), c.data(), n,
         GemmOutput::accumulate, gemm_buffers(scratch, 0), isa);
    const float expected = isa == Isa::portable ? 0.0f : std::ldexp(1.0f, -24);
    for (float value : c) REQUIRE(value == expected);
  }
}

TEST_CASE("the avx2 and avx512 variants give the same bits", "[backend][gemm]") {
  if (!isa_supported(Isa::avx2_fma) || !isa_supported(Isa::avx512_fma)) {
    WARN("skipped: this CPU lacks one of the FMA variants");
    return;
  }
  // The MNIST conv2 backward-filter layout: dy [64, 576] times col^T, accumulated.
  const std::int64_t m = 64, n = 288, k = 576;
  const auto a = test::random_values(std::size_t(m * k), 11);
  const auto col = test::random_values(std::size_t(n * k), 12);
  const auto c0 = test::random_values(std::size_t(m * n), 13);
  ScratchArena scratch(1);
  std::vector<float> c2 = c0, c512 = c0;
  gemm(m, n, k, row_major(a.data(), k), transpose_of(col.data(), k), c2.data(), n,
       GemmOutput::accumulate, gemm_buffers(scratch, 0), Isa::avx2_fma);
  gemm(m, n, k, row_major(a.data(), k), transpose_of(col.data(), k), c512.data(), n,
       GemmOutput::accumulate, gemm_buffers(scratch, 0), Isa::avx512_fma);
  REQUIRE(test::same_bits(c2, c512));
}

TEST_CASE("the process's instruction set follows REPRO_AUDIT_ISA or REPRO_AUDIT_GEMM",
          "[backend][gemm]") {
  const char* isa_variable = std::getenv("REPRO_AUDIT_ISA");
  const char* gemm_variable = std::getenv("REPRO_AUDIT_GEMM");
  const char* forced =
      isa_variable != nullptr && *isa_variable != '\0' ? isa_variable : gemm_variable;
  const std::string_view name = active_isa_name();
  if (forced == nullptr || *forced == '\0') {  // the best this CPU runs
    const Isa best = isa_supported(Isa::avx512_fma) ? Isa::avx512_fma
                     : isa_supported(Isa::avx2_fma) ? Isa::avx2_fma
                                                    : Isa::portable;
    REQUIRE(active_isa() == best);
  } else {  // "avx2" -> "avx2-fma", "avx512" -> "avx512-fma", "portable" -> "portable"
    REQUIRE(name.substr(0, std::string_view(forced).size()) == forced);
  }
}

TEST_CASE("REPRO_AUDIT_GEMM is an alias of REPRO_AUDIT_ISA, and the two may not disagree",
          "[backend][gemm]") {
  REQUIRE(choose_isa(nullptr, "portable") == Isa::portable);
  REQUIRE(choose_isa("portable", nullptr) == Isa::portable);
  REQUIRE(choose_isa("portable", "portable") == Isa::portable);
  REQUIRE(choose_isa("portable", "") == Isa::portable);
  REQUIRE(choose_isa("", "portable") == Isa::portable);
  const Isa best = choose_isa(nullptr, nullptr);
  REQUIRE(isa_supported(best));
  REQUIRE(choose_isa("", "") == best);
  // Both set, different: an input error naming both variables and both values.
  try {
    choose_isa("portable", "avx2");
    FAIL("no error for REPRO_AUDIT_ISA=portable with REPRO_AUDIT_GEMM=avx2");
  } catch (const ra::InputError& e) {
    const std::string message = e.what();
    REQUIRE(message.find("REPRO_AUDIT_ISA=portable") != std::string::npos);
    REQUIRE(message.find("REPRO_AUDIT_GEMM=avx2") != std::string::npos);
  }
  // An unknown value names the variable it came from.
  for (const bool through_alias : {false, true}) {
    try {
      through_alias ? choose_isa(nullptr, "sse9") : choose_isa("sse9", nullptr);
      FAIL("no error for an unknown instruction set");
    } catch (const ra::InputError& e) {
      const std::string message = e.what();
      REQUIRE(message.find(through_alias ? "REPRO_AUDIT_GEMM=sse9" : "REPRO_AUDIT_ISA=sse9") !=
              std::string::npos);
      REQUIRE(message.find("expected portable, avx2 or avx512") != std::string::npos);
    }
  }
}

TEST_CASE("parallel gemm is bitwise independent of the thread count", "[backend][gemm]") {
  // 70 x 600: several task tiles in both directions, partial ones at the edges for every variant.
  const std::int64_t m = 70, n = 600, k = 300;
  const auto a = test::random_values(std::size_t(m * k), 4);
  const auto b = test::random_values(std::size_t(k * n), 5);
  std::vector<float> scale(std::size_t(m * n));
  const auto aa = test::abs_of(a), ab = test::abs_of(b);
  naive_gemm(m, n, k, row_major(aa.data(), k), row_major(ab.data(), n), scale.data(), n,
             GemmOutput::overwrite, Isa::portable);
  for (const Isa isa : test::supported_isas()) {
    std::vector<float> expected(std::size_t(m * n));
    naive_gemm(m, n, k, row_major(a.data(), k), row_major(b.data(), n), expected.data(), n,
               GemmOutput::overwrite, isa);
    for (int threads : {1, 2, 3, 7}) {
      INFO(isa_name(isa) << ", " << threads << " threads");
      ra::ThreadPool pool(threads);
      ScratchArena scratch(threads);
      std::vector<float> c(expected.size(), -1.0f);
      parallel_gemm(pool, scratch, m, n, k, row_major(a.data(), k), row_major(b.data(), n),
                    c.data(), n, GemmOutput::overwrite, isa);
      REQUIRE(test::same_bits(c, expected));
      // Split-k with atomic adds: another summation tree, the same value within rounding.
      std::vector<float> split(expected.size(), -1.0f);
      parallel_gemm_split_k_atomic(pool, scratch, m, n, k, row_major(a.data(), k),
                                   row_major(b.data(), n), split.data(), n, isa);
      REQUIRE_CLOSE(split, expected, test::sum_rtol(k), 0.0, &scale);
    }
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

  // col2im_taps over all taps is col2im, bit for bit; over a partition of the taps its parts sum
  // to col2im up to rounding (as the nondeterministic backward data adds them).
  std::vector<float> all(x.size(), -1.0f);
  col2im_taps(g, cols.data(), 0, g.r * g.s, all.data());
  REQUIRE(std::memcmp(all.data(), dx.data(), dx.size() * sizeof(float)) == 0);
  std::vector<float> first(x.size(), -1.0f), second(x.size(), -1.0f);
  col2im_taps(g, cols.data(), 0, 2, first.data());
  col2im_taps(g, cols.data(), 2, g.r * g.s, second.data());
  for (std::size_t i = 0; i < dx.size(); ++i) {
    REQUIRE(std::abs(first[i] + second[i] - adjoint[i]) <= 6 * 8 * test::kUnitRoundoff);
  }
}

TEST_CASE("benchmark: gemm variants on the Keras MNIST shapes", "[.bench]") {
  // Per-image GEMMs of the convs (single-threaded, as cpu_conv.cpp calls them) and the batch-128
  // dense GEMMs, with the operand layouts the ops use.
  struct Case {
    const char* name;
    std::int64_t m, n, k;
    bool a_transposed, b_transposed;
    GemmOutput output;
  };
  const Case cases[] = {
      {"conv1 forward      32 x 676 x 9  ", 32, 676, 9, false, false, GemmOutput::overwrite},
      {"conv2 forward      64 x 576 x 288", 64, 576, 288, false, false, GemmOutput::overwrite},
      {"conv2 filter grad  64 x 288 x 576", 64, 288, 576, false, true, GemmOutput::accumulate},
      {"conv2 data grad   288 x 576 x 64 ", 288, 576, 64, true, false, GemmOutput::overwrite},
      {"dense1 forward   128 x 128 x 9216", 128, 128, 9216, false, true, GemmOutput::overwrite},
      {"dense1 data grad 128 x 9216 x 128", 128, 9216, 128, false, false, GemmOutput::overwrite},
      {"dense1 w grad    128 x 9216 x 128", 128, 9216, 128, true, false, GemmOutput::overwrite},
  };
  ScratchArena scratch(1);
  for (const Case& t : cases) {
    const auto a_data = test::random_values(std::size_t(t.m * t.k), 1);
    const auto b_data = test::random_values(std::size_t(t.k * t.n), 2);
    std::vector<float> c(std::size_t(t.m * t.n), 0.0f);
    const MatrixView a =
        t.a_transposed ? transpose_of(a_data.data(), t.m) : row_major(a_data.data(), t.k);
    const MatrixView b =
        t.b_transposed ? transpose_of(b_data.data(), t.k) : row_major(b_data.data(), t.n);
    const double flops = 2.0 * double(t.m) * double(t.n) * double(t.k);
    const int reps = std::max(3, int(2e9 / flops));  // ~2 GFLOP per variant and shape
    for (const Isa isa : test::supported_isas()) {
      gemm(t.m, t.n, t.k, a, b, c.data(), t.n, t.output, gemm_buffers(scratch, 0), isa);
      double best = 1e30;  // the best of 3 rounds: the least disturbed by other processes
      for (int round = 0; round < 3; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r)
          gemm(t.m, t.n, t.k, a, b, c.data(), t.n, t.output, gemm_buffers(scratch, 0), isa);
        best = std::min(
            best,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps);
      }
      std::cout << t.name << "  " << isa_name(isa) << ": " << flops / best * 1e-9 << " GFLOP/s\n";
    }
  }
}
