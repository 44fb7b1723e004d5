// maxpool2d beyond the op table (tests/ops checks both ops against the reference): a
// hand-computed case, the 2x2/2 fast path's ties, signed zeros and NaNs with every kernel's code,
// corrupt argmax, the relu gate, and finite differences.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "backend/backend_test_util.h"
#include "backend/cpu/conv/direct_conv_support.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"
#include "core/error.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::KernelMode;
using ra::backend::PoolGeometry;

namespace {

using test::kModes;
using test::PoolCase;

std::vector<PoolCase> pool_cases() {
  return {
      {"2x2 stride 2", test::pool(2, 3, 8, 8, 2, 2, 2, 2)},
      {"3x3 stride 2 (overlapping)", test::pool(2, 3, 9, 7, 3, 3, 2, 2)},
      {"2x2 stride 2 on odd 7x7 (last row/col dropped)", test::pool(2, 2, 7, 7, 2, 2, 2, 2)},
      {"3x3 stride 1 pad 1 (same, overlapping)", test::pool(1, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"2x3 stride (2,1)", test::pool(1, 5, 6, 7, 2, 3, 2, 1)},
      {"3x3 stride 2 pad 1, 40 planes", test::pool(5, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1)},
  };
}

// Distinct values spaced 1/64 apart in shuffled order: no ties, so argmax is unambiguous, and any
// perturbation below 1/128 keeps every window's winner.
std::vector<float> distinct_values(std::size_t count, std::uint32_t seed) {
  std::vector<float> v(count);
  std::iota(v.begin(), v.end(), 0.0f);
  const auto keys = test::random_values(count, seed);
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  for (std::size_t i = 0; i < count; ++i) v[order[i]] = (float(i) - float(count) / 2) / 64.0f;
  return v;
}

}  // namespace

TEST_CASE("maxpool2d forward on a hand-computed case, with ties and padding", "[backend][pool]") {
  // One 4x4 plane:        pool 2 stride 2:          pool 3 stride 2 pad 1 (windows start at -1, 1):
  //   1 5 2 2             max 5 at 1, 2 at 2        (0,0) rows -1..1, cols -1..1: 5 at 1
  //   3 0 2 2             (tie: first = index 2)    (0,1) rows -1..1, cols 1..3: 5 at 1
  //   9 9 4 -1            9 at 8 (tie: first)       (1,0) rows 1..3, cols -1..1: 9 at 8 (tie 9 at
  //   9) 9 1 -2 -3           4 at 10                   (1,1) rows 1..3, cols 1..3: 9 at 9
  const std::vector<float> x{1, 5, 2, 2, 3, 0, 2, 2, 9, 9, 4, -1, 9, 1, -2, -3};
  ra::backend::cpu::CpuOps ops(2);
  {
    const auto g = test::pool(1, 1, 4, 4, 2, 2, 2, 2);
    std::vector<float> y(4);
    std::vector<std::int32_t> argmax(4);
    ops.maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    REQUIRE(y == std::vector<float>{5, 2, 9, 4});
    REQUIRE(argmax == std::vector<std::int32_t>{1, 2, 8, 10});
  }
  {
    const auto g = test::pool(1, 1, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    REQUIRE((g.p == 2 && g.q == 2));
    std::vector<float> y(4);
    std::vector<std::int32_t> argmax(4);
    ops.maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    REQUIRE(y == std::vector<float>{5, 5, 9, 9});
    REQUIRE(argmax == std::vector<std::int32_t>{1, 1, 8, 9});
    // Backward: dy = [1 2 4 8]; x[1] receives 1 + 2, x[8] 4, x[9] 8, everything else 0.
    const std::vector<float> dy{1, 2, 4, 8};
    for (const KernelMode mode : kModes) {
      std::vector<float> dx(16, -1.0f);
      ops.maxpool2d_backward(g, dy.data(), argmax.data(), nullptr, dx.data(), mode);
      std::vector<float> expected(16, 0.0f);
      expected[1] = 3, expected[8] = 4, expected[9] = 8;
      REQUIRE(dx == expected);
    }
  }
  {  // negative values next to padding: padding (-inf, never 0) must not win
    const std::vector<float> neg{-5, -4, -3, -2};
    const auto g = test::pool(1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1);
    REQUIRE((g.p == 3 && g.q == 3));
    std::vector<float> y(9);
    std::vector<std::int32_t> argmax(9);
    ops.maxpool2d_forward(g, neg.data(), y.data(), argmax.data());
    REQUIRE(y == std::vector<float>{-5, -4, -4, -3, -2, -2, -3, -2, -2});
    REQUIRE(argmax == std::vector<std::int32_t>{0, 1, 1, 2, 3, 3, 2, 3, 3});
  }
}

TEST_CASE("maxpool2d 2x2/2 fast path keeps the reference's ties, signed zeros and NaNs",
          "[backend][pool]") {
  // 10x10 planes: q = 5 outputs per row, so the SSE path takes q 0-3 and the scalar tail q 4.
  const auto g = test::pool(2, 2, 10, 10, 2, 2, 2, 2);
  REQUIRE((g.p == 5 && g.q == 5));
  std::vector<float> x(g.x_size());
  // Background of 0, 1, 2: ties in most windows.
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i * 7 % 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Window (p, q) of `plane` gets values {top-left, top-right, bottom-left, bottom-right}.
  const auto plant = [&](int plane, int p, int q, std::array<float, 4> v) {
    for (int k = 0; k < 4; ++k)
      x[std::size_t(plane * 100 + (2 * p + k / 2) * 10 + 2 * q + k % 2)] = v[k];
  };
  plant(0, 0, 0, {1, 1, 1, 1});          // four-way tie: top-left
  plant(0, 0, 1, {nan, 3, 4, 5});        // NaN first: it stays (nothing compares greater)
  plant(0, 0, 2, {0, 3, 3, nan});        // NaN last never wins; tie of 3: top-right
  plant(0, 0, 3, {-0.0f, 0, 0, 0});      // -0 first: it stays, sign and all
  plant(0, 0, 4, {nan, 1, 2, 3});        // the tail: NaN first
  plant(0, 1, 4, {-0.0f, 0, -0.0f, 0});  // the tail: signed-zero tie
  plant(0, 2, 4, {1, nan, 5, 5});        // the tail: NaN in the middle, tie of 5: bottom-left
  plant(0, 1, 0, {0, -0.0f, -0.0f, 0});  // +0 first stays
  plant(0, 1, 1, {2, nan, nan, 2});      // NaNs between a tie
  plant(1, 3, 2, {nan, nan, nan, nan});  // all NaN: the first
  for (const int threads : {1, 3}) {
    INFO(threads << " thread(s)");
    ra::backend::cpu::CpuOps ops(threads);
    std::vector<float> y(g.y_size()), y_ref(g.y_size());
    std::vector<std::int32_t> argmax(g.y_size(), -7), argmax_ref(g.y_size());
    ops.maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    ref::maxpool2d_forward(g, x.data(), y_ref.data(), argmax_ref.data());
    REQUIRE(test::same_bits(y, y_ref));  // bits: NaN != NaN, and -0 == +0
    REQUIRE(argmax == argmax_ref);
    // The planted windows, spelled out (the reference could share a mistake).
    REQUIRE(argmax[0] == 0);
    REQUIRE((std::isnan(y[1]) && argmax[1] == 2));
    REQUIRE((y[2] == 3 && argmax[2] == 5));
    REQUIRE((y[3] == 0 && std::signbit(y[3]) && argmax[3] == 6));
    REQUIRE((std::isnan(y[4]) && argmax[4] == 8));
    REQUIRE((y[9] == 0 && std::signbit(y[9]) && argmax[9] == 28));
    REQUIRE((y[14] == 5 && argmax[14] == 58));
    REQUIRE((y[5] == 0 && !std::signbit(y[5]) && argmax[5] == 20));
    REQUIRE((y[6] == 2 && argmax[6] == 22));
    REQUIRE((std::isnan(y[25 + 17]) && argmax[25 + 17] == 100 + 64));
  }
}

TEST_CASE(
    "maxpool_plane_2x2 gives the reference's values and argmax with every instruction set's code",
    "[backend][pool]") {
  // Rows of 35 outputs: two whole 16-output steps of the AVX-512 loop and a masked one of 3; 19
  // input rows (the last one dropped). Values in {0, 1, 2, 3}, -0 and NaN: ties everywhere.
  const auto g = test::pool(1, 2, 19, 71, 2, 2, 2, 2);
  REQUIRE((g.p == 9 && g.q == 35));
  std::vector<float> x(g.x_size());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t r = i * 2654435761u % 97;
    x[i] = r < 5 ? nan : r < 12 ? -0.0f : float(r % 4);
  }
  std::vector<float> y_ref(g.y_size());
  std::vector<std::int32_t> argmax_ref(g.y_size());
  ref::maxpool2d_forward(g, x.data(), y_ref.data(), argmax_ref.data());
  const std::int64_t plane_in = std::int64_t(g.h) * g.w, plane_out = std::int64_t(g.p) * g.q;
  for (const auto isa : test::supported_isas()) {
    INFO(ra::backend::cpu::isa_name(isa));
    std::vector<float> y(g.y_size(), 9.0f);
    std::vector<std::int32_t> argmax(g.y_size(), -7);
    for (std::int64_t plane = 0; plane < std::int64_t(g.n) * g.c; ++plane) {
      ra::backend::cpu::maxpool_plane_2x2(g, x.data() + plane * plane_in, plane * plane_in,
                                          y.data() + plane * plane_out,
                                          argmax.data() + plane * plane_out, isa);
    }
    REQUIRE(test::same_bits(y, y_ref));
    REQUIRE(argmax == argmax_ref);
  }
}

TEST_CASE("maxpool2d backward rejects an argmax outside its plane", "[backend][pool]") {
  const auto g = test::pool(1, 2, 4, 4, 2, 2, 2, 2);
  std::vector<std::int32_t> argmax(g.y_size(), 0);  // plane 1 pointing into plane 0
  const std::vector<float> dy(g.y_size(), 1.0f);
  std::vector<float> dx(g.x_size());
  ra::backend::cpu::CpuOps ops(1);
  for (const KernelMode mode : kModes) {
    REQUIRE_THROWS_AS(ops.maxpool2d_backward(g, dy.data(), argmax.data(), nullptr, dx.data(), mode),
                      ra::RuntimeFailure);
  }
}

TEST_CASE("maxpool2d 2x2/2 backward rejects an argmax outside its window", "[backend][pool]") {
  // Inside the plane but not in the output's own 2x2 block: the fast path's check, in its vector
  // part (outputs 0-3 of a row of 5) and in its scalar tail (output 4).
  const auto g = test::pool(1, 1, 10, 10, 2, 2, 2, 2);
  std::vector<float> x = test::random_values(static_cast<std::size_t>(g.x_size()), 91);
  std::vector<float> y(g.y_size());
  std::vector<std::int32_t> good(g.y_size());
  ra::backend::cpu::CpuOps ops(1);
  ops.maxpool2d_forward(g, x.data(), y.data(), good.data());
  const std::vector<float> dy(g.y_size(), 1.0f);
  std::vector<float> dx(g.x_size());
  for (const int output : {2, 4}) {
    std::vector<std::int32_t> argmax = good;
    argmax[output] = good[output] ^ 2;  // a column of the next (or previous) block
    INFO("output " << output);
    REQUIRE_THROWS_AS(ops.maxpool2d_backward(g, dy.data(), argmax.data(), nullptr, dx.data(),
                                             KernelMode::deterministic),
                      ra::RuntimeFailure);
  }
}

TEST_CASE("maxpool2d gradient matches central differences", "[backend][pool][gradient]") {
  // L = sum(maxpool(x) * r) is piecewise linear; with values 1/64 apart and h = 1e-3 no window
  // changes its winner, so the central difference is exact up to double rounding.
  for (const PoolCase& c : pool_cases()) {
    INFO(c.name);
    const PoolGeometry& g = c.g;
    const auto xf = distinct_values(g.x_size(), 3);
    const auto r = test::random_values(g.y_size(), 4);
    std::vector<double> x = test::to_double(xf);
    const std::vector<double> rd = test::to_double(r);
    auto objective = [&] {
      std::vector<double> y(g.y_size());
      std::vector<std::int32_t> argmax(g.y_size());
      ref::maxpool2d_forward(g, x.data(), y.data(), argmax.data());
      return std::inner_product(y.begin(), y.end(), rd.begin(), 0.0);
    };
    const auto numeric = ra::backend::central_differences(x, 1e-3, objective);
    ra::backend::cpu::CpuOps ops(2);
    std::vector<float> y(g.y_size());
    std::vector<std::int32_t> argmax(g.y_size());
    ops.maxpool2d_forward(g, xf.data(), y.data(), argmax.data());
    for (const KernelMode mode : kModes) {
      std::vector<float> dx(g.x_size());
      ops.maxpool2d_backward(g, r.data(), argmax.data(), nullptr, dx.data(), mode);
      const auto check = ra::backend::compare_gradients(dx, numeric, 1e-6, 1e-6);
      INFO("mode " << int(mode) << " " << check.describe());
      REQUIRE(check.ok);
    }
  }
}

TEST_CASE("max-pool backward with a relu gate equals max-pool backward then relu backward",
          "[backend][pool]") {
  // The pooled input is a relu output (zeros included, so that the gate closes), pooled with
  // overlapping windows (stride < pool: several windows add into one element) and disjoint ones.
  ra::backend::cpu::CpuOps ops(2);
  const ra::backend::PoolGeometry cases[] = {test::pool(3, 4, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1),
                                             test::pool(3, 4, 8, 8, 2, 2, 2, 2)};
  for (const auto& g : cases) {
    auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 71);
    for (float& v : x) v = v > 0.0f ? v : 0.0f;  // relu output
    const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 72);
    std::vector<float> y(g.y_size());
    std::vector<std::int32_t> argmax(g.y_size());
    ops.maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    for (const KernelMode mode : kModes) {
      std::vector<float> fused(g.x_size(), -1.0f), separate(g.x_size(), -1.0f);
      ops.maxpool2d_backward(g, dy.data(), argmax.data(), y.data(), fused.data(), mode);
      ops.maxpool2d_backward(g, dy.data(), argmax.data(), nullptr, separate.data(), mode);
      ops.activation_backward(ra::backend::Activation::relu, g.x_size(), x.data(), separate.data(),
                              separate.data());
      if (mode == KernelMode::deterministic) {
        REQUIRE(test::same_bits(fused, separate));
      } else {  // atomic adds: the order of the adds may differ between the two calls
        REQUIRE_CLOSE(fused, separate, 4 * test::kUnitRoundoff, 0.0, nullptr);
      }
    }
  }
}

TEST_CASE("maxpool2d 2x2/2 backward writes the bits of the reference scatter", "[backend][pool]") {
  // The fast path writes each 2x2 block of dx once instead of zeroing dx and adding dy: the bits
  // must be the reference's (0 + dy: a -0 becomes +0, a NaN stays), with odd planes (the last row
  // and column belong to no window: +0), a relu gate, and rows of more than 4 outputs.
  for (const auto& g : {test::pool(2, 3, 7, 9, 2, 2, 2, 2), test::pool(1, 2, 12, 10, 2, 2, 2, 2)}) {
    const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 81);
    auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 82);
    for (std::size_t i = 0; i < dy.size(); i += 5) dy[i] = -0.0f;
    dy[1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(g.y_size());
    std::vector<std::int32_t> argmax(g.y_size());
    ra::backend::cpu::CpuOps ops(3);
    ops.maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    for (const bool gate : {false, true}) {
      // The gate closes where the pooled value is not positive (about half the windows here).
      std::vector<float> gated = dy;
      if (gate) {
        for (std::size_t i = 0; i < gated.size(); ++i) gated[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      }
      std::vector<float> expected(g.x_size());
      ref::maxpool2d_backward(g, gated.data(), argmax.data(), expected.data());
      for (const KernelMode mode : kModes) {
        INFO("gate " << gate << ", mode " << int(mode) << ", plane " << g.h << "x" << g.w);
        std::vector<float> dx(g.x_size(), std::numeric_limits<float>::quiet_NaN());
        ops.maxpool2d_backward(g, dy.data(), argmax.data(), gate ? y.data() : nullptr, dx.data(),
                               mode);
        REQUIRE(test::same_bits(dx, expected));
      }
    }
  }
}

TEST_CASE("unpool_shifted writes maxpool2d_backward's planes into a zero-padded copy",
          "[backend][pool]") {
  // The data gradient of conv2d_backward_maxpool unpools dy straight into its padded copy: every
  // float of the copy must be written (the buffer is scratch, holding whatever came before), the
  // image where shifted_copy of the unpooled image puts it, and nothing when the shifts would
  // crop the image (then the caller copies).
  using ra::backend::cpu::PooledGradient;
  const auto pg = test::pool(2, 3, 7, 9, 2, 2, 2, 2);  // odd H and W: a last row and column
  const auto x = test::random_values(static_cast<std::size_t>(pg.x_size()), 61);
  std::vector<float> pooled(pg.y_size());
  std::vector<std::int32_t> argmax(pg.y_size());
  ra::backend::cpu::CpuOps ops(1);
  ops.maxpool2d_forward(pg, x.data(), pooled.data(), argmax.data());
  const auto dy = test::random_values(static_cast<std::size_t>(pg.y_size()), 62);
  std::vector<float> unpooled(pg.x_size());
  ops.maxpool2d_backward(pg, dy.data(), argmax.data(), pooled.data(), unpooled.data(),
                         ra::backend::KernelMode::deterministic);
  const PooledGradient gradient{pg, {dy.data(), argmax.data(), pooled.data()}};
  struct Shift {
    std::int64_t row, col, height, width;
    bool fits;
  };
  for (const Shift s :
       {Shift{2, 1, 12, 13, true}, Shift{0, 3, 7, 12, true}, Shift{1, 0, 9, 9, true},
        Shift{0, -1, 7, 9, false}, Shift{-1, 0, 7, 9, false}, Shift{1, 1, 7, 10, false}}) {
    INFO("shift (" << s.row << ", " << s.col << ") into " << s.height << " x " << s.width);
    const std::size_t image = static_cast<std::size_t>(pg.c * s.height * s.width);
    for (std::int64_t n = 0; n < pg.n; ++n) {
      std::vector<float> expected(image), copy(image, std::numeric_limits<float>::quiet_NaN());
      ra::backend::cpu::direct_detail::shifted_copy(unpooled.data() + n * pg.c * pg.h * pg.w, pg.c,
                                                    pg.h, pg.w, s.row, s.col, expected.data(),
                                                    s.height, s.width);
      const bool wrote = ra::backend::cpu::direct_detail::unpool_shifted(
          gradient, n, s.row, s.col, copy.data(), s.height, s.width);
      REQUIRE(wrote == s.fits);
      if (s.fits) {
        REQUIRE(test::same_bits(copy, expected));
      } else {
        REQUIRE(std::isnan(copy[0]));
      }
    }
  }
}
