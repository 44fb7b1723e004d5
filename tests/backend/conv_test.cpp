// conv2d beyond the op table (tests/ops, which checks every conv op against the reference on
// shapes that stress every edge): fused ops against the separate ones bit for bit, a corrupt
// argmax, a hand-computed case, and finite differences.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>

#include "backend/backend_test_util.h"
#include "backend/cpu/conv/direct_conv.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"
#include "core/error.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::ConvGeometry;
using ra::backend::KernelMode;

namespace {

using test::conv_cases;
using test::ConvCase;
using test::kModes;

struct ConvData {
  std::vector<float> x, w, b, dy;
};

ConvData conv_data(const ConvGeometry& g, std::uint32_t seed) {
  return {test::random_values(g.x_size(), seed), test::random_values(g.w_size(), seed + 1),
          test::random_values(g.k, seed + 2), test::random_values(g.y_size(), seed + 3)};
}

std::vector<float> nan_filled(std::int64_t n) {
  // Outputs start as NaN: an element an op forgets to write, or accumulates into, fails the check.
  return std::vector<float>(static_cast<std::size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

const char* mode_name(KernelMode m) {
  return m == KernelMode::deterministic ? "deterministic" : "nondeterministic";
}

}  // namespace

TEST_CASE("fused filter and bias gradients equal the two separate ops", "[backend][conv]") {
  // Same mode for both: one pass over dy with the bits of the two calls (deterministic), or
  // within the reference's bound (nondeterministic). Different modes: the two calls. The last case
  // cuts the batch differently for dw (partial budget: 28 chunks, so 3 images each) and db (2
  // each): the two calls too.
  std::vector<ConvCase> cases = conv_cases();
  cases.push_back({"filter and bias chunk plans differ", test::conv(64, 64, 5, 5, 256, 3, 3)});
  REQUIRE(!ra::backend::cpu::fuses_bias_gradient(cases.back().g));
  // The Keras MNIST convs are fused.
  REQUIRE(ra::backend::cpu::fuses_bias_gradient(test::conv(128, 1, 28, 28, 32, 3, 3)));
  REQUIRE(ra::backend::cpu::fuses_bias_gradient(test::conv(128, 32, 26, 26, 64, 3, 3)));
  for (int threads : {1, 2, 7}) {
    ra::backend::cpu::CpuOps ops(threads);
    for (const ConvCase& c : cases) {
      const ConvGeometry& g = c.g;
      const ConvData d = conv_data(g, 29);
      const auto ax = test::abs_of(d.x), ady = test::abs_of(d.dy);
      std::vector<float> dw_ref(g.w_size()), dw_scale(g.w_size()), db_ref(g.k), db_scale(g.k);
      ref::conv2d_backward_filter(g, d.x.data(), d.dy.data(), dw_ref.data());
      ref::conv2d_backward_filter(g, ax.data(), ady.data(), dw_scale.data());
      ref::conv2d_backward_bias(g, d.dy.data(), db_ref.data());
      ref::conv2d_backward_bias(g, ady.data(), db_scale.data());
      const std::int64_t batch_terms = std::int64_t(g.n) * g.p * g.q;
      for (const KernelMode filter_mode : kModes) {
        for (const KernelMode bias_mode : kModes) {
          INFO(c.name << ", " << threads << " threads, filter " << mode_name(filter_mode)
                      << ", bias " << mode_name(bias_mode));
          auto dw = nan_filled(g.w_size()), db = nan_filled(g.k);
          ops.conv2d_backward_filter_bias(g, d.x.data(), d.dy.data(), dw.data(), db.data(),
                                          filter_mode, bias_mode);
          REQUIRE_CLOSE(dw, dw_ref, test::sum_rtol(batch_terms), 0.0, &dw_scale);
          REQUIRE_CLOSE(db, db_ref, test::sum_rtol(batch_terms), 0.0, &db_scale);
          if (filter_mode == KernelMode::nondeterministic ||
              bias_mode == KernelMode::nondeterministic) {
            continue;  // atomics: no bits to compare
          }
          auto dw_apart = nan_filled(g.w_size()), db_apart = nan_filled(g.k);
          ops.conv2d_backward_filter(g, d.x.data(), d.dy.data(), dw_apart.data(), filter_mode);
          ops.conv2d_backward_bias(g, d.dy.data(), db_apart.data(), bias_mode);
          REQUIRE(test::same_bits(dw, dw_apart));
          REQUIRE(test::same_bits(db, db_apart));
        }
      }
    }
  }
}

TEST_CASE("conv2d_forward_maxpool gives the values and argmax of the two ops", "[backend][conv]") {
  // Fused where the CPU backend can (stride-1 conv, 2x2/2 pool): the conv output buffer is then
  // left unwritten. Elsewhere the two ops. Odd conv outputs (the pool drops the last row and
  // column), same padding, batch 1, filters not a multiple of the tile rows, three activations.
  struct Case {
    const char* name;
    ConvGeometry g;
    int pool, stride;
    bool fused;
  };
  const Case cases[] = {
      {"Keras conv2 shape, batch 3", test::conv(3, 32, 26, 26, 64, 3, 3), 2, 2, true},
      {"odd 7x9 output, 5 filters", test::conv(2, 3, 9, 11, 5, 3, 3), 2, 2, true},
      {"same padding, batch 1, 13 filters", test::conv(1, 4, 8, 10, 13, 3, 3, 1, 1, 1, 1, 1, 1), 2,
       2, true},
      {"3x3/2 pool (overlapping): the two ops", test::conv(2, 3, 9, 9, 6, 3, 3), 3, 2, false},
      {"strided conv: the two ops", test::conv(2, 3, 11, 11, 6, 3, 3, 2, 2), 2, 2, false},
  };
  for (const int threads : {1, 3}) {
    ra::backend::cpu::CpuOps ops(threads);
    for (const Case& c : cases) {
      const ConvGeometry& g = c.g;
      const auto pg = test::pool(g.n, g.k, g.p, g.q, c.pool, c.pool, c.stride, c.stride);
      REQUIRE(ra::backend::cpu::fuses_maxpool(g, pg) == c.fused);
      const ConvData d = conv_data(g, 41);
      for (const auto act : {ra::backend::Activation::relu, ra::backend::Activation::none,
                             ra::backend::Activation::tanh}) {
        INFO(c.name << ", " << threads << " threads, activation " << int(act));
        std::vector<float> conv_y(g.y_size()), y_ref(pg.y_size());
        std::vector<std::int32_t> argmax_ref(pg.y_size());
        ops.conv2d_forward(g, d.x.data(), d.w.data(), d.b.data(), act, conv_y.data());
        ops.maxpool2d_forward(pg, conv_y.data(), y_ref.data(), argmax_ref.data());
        auto conv_out = nan_filled(g.y_size()), y = nan_filled(pg.y_size());
        std::vector<std::int32_t> argmax(pg.y_size(), -7);
        ops.conv2d_forward_maxpool(g, d.x.data(), d.w.data(), d.b.data(), act, pg, conv_out.data(),
                                   y.data(), argmax.data());
        REQUIRE(test::same_bits(y, y_ref));
        REQUIRE(argmax == argmax_ref);
        // The fused pass never stores the conv output; the two ops do.
        REQUIRE(std::isnan(conv_out[0]) == c.fused);
      }
    }
  }
}

TEST_CASE("conv2d_backward_maxpool gives the gradients of the three ops", "[backend][conv]") {
  // Fused where the CPU backend can (the pooled forward's shapes, direct data and filter paths in
  // modes it fuses): each image's conv output gradient is then unpooled where it is used and
  // conv_dy left unwritten. Elsewhere the three ops, which write it. The pool's gate (its
  // output), the data gradient's relu gate (the conv input), with and without bias and dx.
  struct Case {
    const char* name;
    ConvGeometry g;
    int pool, stride;
  };
  const Case cases[] = {
      {"Keras conv2 shape, batch 3", test::conv(3, 32, 26, 26, 64, 3, 3), 2, 2},
      {"odd 7x9 output, 5 filters", test::conv(2, 3, 9, 11, 5, 3, 3), 2, 2},
      {"same padding, batch 1, 13 filters", test::conv(1, 4, 8, 10, 13, 3, 3, 1, 1, 1, 1, 1, 1), 2,
       2},
      // Padding beyond the kernel: dy's copy for the data gradient is cropped, not just padded.
      {"3x3, pad 3 > kernel", test::conv(2, 3, 6, 7, 5, 3, 3, 1, 1, 3, 3, 3, 3), 2, 2},
      {"3x3/2 pool (overlapping): the three ops", test::conv(2, 3, 9, 9, 6, 3, 3), 3, 2},
      {"strided conv: the three ops", test::conv(2, 3, 11, 11, 6, 3, 3, 2, 2), 2, 2},
  };
  using ra::backend::KernelMode;
  for (const int threads : {1, 3}) {
    ra::backend::cpu::CpuOps ops(threads);
    for (const Case& c : cases) {
      const ConvGeometry& g = c.g;
      const auto pg = test::pool(g.n, g.k, g.p, g.q, c.pool, c.pool, c.stride, c.stride);
      ConvData d = conv_data(g, 43);
      for (float& v : d.x) v = v > 0.0f ? v : 0.0f;  // a relu output: the data gradient's gate
      // The pooled relu output and its argmax, as the forward pass leaves them.
      std::vector<float> conv_y(g.y_size()), pooled(pg.y_size());
      std::vector<std::int32_t> argmax(pg.y_size());
      ops.conv2d_forward(g, d.x.data(), d.w.data(), d.b.data(), ra::backend::Activation::relu,
                         conv_y.data());
      ops.maxpool2d_forward(pg, conv_y.data(), pooled.data(), argmax.data());
      const auto pooled_dy = test::random_values(static_cast<std::size_t>(pg.y_size()), 44);
      for (const KernelMode filter_mode :
           {KernelMode::deterministic, KernelMode::nondeterministic}) {
        for (const bool with_bias : {true, false}) {
          for (const bool with_dx : {true, false}) {
            INFO(c.name << ", " << threads << " threads, filter mode " << int(filter_mode)
                        << ", bias " << with_bias << ", dx " << with_dx);
            ra::backend::ConvPoolBackwardModes modes;
            modes.filter = modes.bias = filter_mode;
            // The separate ops.
            std::vector<float> conv_dy_ref(g.y_size());
            auto dx_ref = nan_filled(g.x_size()), dw_ref = nan_filled(g.w_size()),
                 db_ref = nan_filled(g.k);
            ops.maxpool2d_backward(pg, pooled_dy.data(), argmax.data(), pooled.data(),
                                   conv_dy_ref.data(), modes.pool);
            ops.conv2d_backward_filter(g, d.x.data(), conv_dy_ref.data(), dw_ref.data(),
                                       filter_mode);
            ops.conv2d_backward_bias(g, conv_dy_ref.data(), db_ref.data(), filter_mode);
            ops.conv2d_backward_data(g, conv_dy_ref.data(), d.w.data(), d.x.data(), dx_ref.data(),
                                     modes.data);
            // The composite.
            auto conv_dy = nan_filled(g.y_size()), dx = nan_filled(g.x_size()),
                 dw = nan_filled(g.w_size()), db = nan_filled(g.k);
            ops.conv2d_backward_maxpool(g, pg, {pooled_dy.data(), argmax.data(), pooled.data()},
                                        d.x.data(), d.w.data(), d.x.data(), conv_dy.data(),
                                        with_dx ? dx.data() : nullptr, dw.data(),
                                        with_bias ? db.data() : nullptr, modes);
            if (filter_mode == KernelMode::deterministic) {
              REQUIRE(test::same_bits(dw, dw_ref));
              if (with_bias) REQUIRE(test::same_bits(db, db_ref));
            } else {  // atomic adds: other orders
              REQUIRE_CLOSE(dw, dw_ref, 64 * test::kUnitRoundoff, 1e-5, nullptr);
              if (with_bias) REQUIRE_CLOSE(db, db_ref, 64 * test::kUnitRoundoff, 1e-5, nullptr);
            }
            if (!with_bias) REQUIRE(std::isnan(db[0]));
            if (with_dx) REQUIRE(test::same_bits(dx, dx_ref));
            if (!with_dx) REQUIRE(std::isnan(dx[0]));
            // The fused pass never stores the conv output's gradient; the three ops do.
            const bool fused = ra::backend::cpu::fuses_maxpool(g, pg) &&
                               (!with_bias || ra::backend::cpu::fuses_bias_gradient(g));
            REQUIRE(std::isnan(conv_dy[0]) == fused);
            if (!fused) REQUIRE(test::same_bits(conv_dy, conv_dy_ref));
          }
        }
      }
    }
  }
}

TEST_CASE("conv2d_backward_maxpool rejects an argmax outside its window", "[backend][conv]") {
  // The fused path reports a corrupt argmax as maxpool2d_backward does, from inside its loops.
  const ConvGeometry g = test::conv(2, 3, 9, 11, 5, 3, 3);
  const auto pg = test::pool(g.n, g.k, g.p, g.q, 2, 2, 2, 2);
  REQUIRE(ra::backend::cpu::fuses_maxpool(g, pg));
  const ConvData d = conv_data(g, 45);
  std::vector<float> conv_y(g.y_size()), pooled(pg.y_size());
  std::vector<std::int32_t> argmax(pg.y_size());
  ra::backend::cpu::CpuOps ops(2);
  ops.conv2d_forward(g, d.x.data(), d.w.data(), d.b.data(), ra::backend::Activation::relu,
                     conv_y.data());
  ops.maxpool2d_forward(pg, conv_y.data(), pooled.data(), argmax.data());
  argmax[pg.y_size() - 1] = 0;  // the last window's winner, moved to the first plane
  std::vector<float> conv_dy(g.y_size()), dx(g.x_size()), dw(g.w_size()), db(g.k);
  REQUIRE_THROWS_AS(ops.conv2d_backward_maxpool(g, pg, {d.dy.data(), argmax.data(), nullptr},
                                                d.x.data(), d.w.data(), nullptr, conv_dy.data(),
                                                dx.data(), dw.data(), db.data(), {}),
                    ra::RuntimeFailure);
}

TEST_CASE("conv2d forward on a hand-computed case", "[backend][conv]") {
  // x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 2] [3 4]], bias 0.5 (one channel, one filter).
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 2, 3, 4}, b{0.5f};
  ra::backend::cpu::CpuOps ops(2);
  SECTION("valid, stride 1") {
    // y[p,q] = x[p,q] + 2 x[p,q+1] + 3 x[p+1,q] + 4 x[p+1,q+1] + 0.5:
    //   1+4+12+20 = 37, 2+6+15+24 = 47, 4+10+21+32 = 67, 5+12+24+36 = 77.
    const auto g = test::conv(1, 1, 3, 3, 1, 2, 2);
    REQUIRE((g.p == 2 && g.q == 2));
    std::vector<float> y(4), expected{37.5f, 47.5f, 67.5f, 77.5f};
    ops.conv2d_forward(g, x.data(), w.data(), b.data(), ra::backend::Activation::none, y.data());
    REQUIRE(y == expected);
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
    REQUIRE(y == expected);
  }
  SECTION("pad 1, stride 2") {
    // Windows start at (2p-1, 2q-1); taps in the padding read 0:
    //   (0,0): x00*4 = 4;  (0,1): x01*3 + x02*4 = 6+12 = 18;
    //   (1,0): x10*2 + x20*4 = 8+28 = 36;  (1,1): 5*1 + 6*2 + 8*3 + 9*4 = 77.
    const auto g = test::conv(1, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1, 1, 1);
    REQUIRE((g.p == 2 && g.q == 2));
    std::vector<float> y(4), expected{4.5f, 18.5f, 36.5f, 77.5f};
    ops.conv2d_forward(g, x.data(), w.data(), b.data(), ra::backend::Activation::none, y.data());
    REQUIRE(y == expected);
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
    REQUIRE(y == expected);
  }
}

TEST_CASE("conv2d gradients match central differences", "[backend][conv][gradient]") {
  // L = sum(y * r) for a fixed random r, with y computed by the reference in double. L is linear
  // in each of x, w, b, so the central difference is exact up to double rounding (~1e-16 |L| / h
  // ~ 1e-13 with h = 1e-2); the 1e-5 tolerance is the float error of the fast backward op (sums
  // of <= 12 products of values in [-1, 1]: worst case ~14 * 6e-8 * 12 ~ 1e-5).
  const auto g =
      test::conv(2, 2, 6, 5, 3, 3, 2, 2, 1, 0, 1, 1, 0);  // stride (2,1), asymmetric pads
  const ConvData d = conv_data(g, 41);
  const std::vector<float>& r = d.dy;
  std::vector<double> x = test::to_double(d.x), w = test::to_double(d.w), b = test::to_double(d.b);
  const std::vector<double> rd = test::to_double(r);
  auto objective = [&] {
    std::vector<double> y(g.y_size());
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
    return std::inner_product(y.begin(), y.end(), rd.begin(), 0.0);
  };
  const double h = 1e-2, rtol = 1e-5, atol = 1e-5;
  const auto numeric_dx = ra::backend::central_differences(x, h, objective);
  const auto numeric_dw = ra::backend::central_differences(w, h, objective);
  const auto numeric_db = ra::backend::central_differences(b, h, objective);
  ra::backend::cpu::CpuOps ops(2);
  for (const KernelMode mode : kModes) {
    INFO(mode_name(mode));
    std::vector<float> dx(g.x_size()), dw(g.w_size()), db(g.k);
    ops.conv2d_backward_data(g, r.data(), d.w.data(), nullptr, dx.data(), mode);
    ops.conv2d_backward_filter(g, d.x.data(), r.data(), dw.data(), mode);
    ops.conv2d_backward_bias(g, r.data(), db.data(), mode);
    for (const auto& [name, analytic, numeric] :
         {std::tuple{"dx", &dx, &numeric_dx}, std::tuple{"dw", &dw, &numeric_dw},
          std::tuple{"db", &db, &numeric_db}}) {
      const auto check = ra::backend::compare_gradients(*analytic, *numeric, rtol, atol);
      INFO(name << " " << check.describe());
      REQUIRE(check.ok);
    }
  }
}
