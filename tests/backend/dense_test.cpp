// dense: the fast GEMM-based kernels against the reference (shapes around the GEMM tile and
// cache-block sizes), a hand-computed case, and finite differences.
#include <catch2/catch.hpp>

#include <limits>
#include <numeric>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"

namespace ref = ra::backend::reference;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;

namespace {

struct DenseCase {
  const char* name;
  DenseGeometry g;
};

std::vector<DenseCase> dense_cases() {
  return {
      {"1 -> 1, batch 1", {1, 1, 1}},
      {"17 -> 5, batch 3", {3, 17, 5}},
      {"300 -> 13 (depth past one k block), batch 7", {7, 300, 13}},
      {"65 -> 129 (edge tiles everywhere), batch 33", {33, 65, 129}},
      {"1030 -> 40 (dx wider than one n block), batch 2", {2, 1030, 40}},
      {"20 -> 33, batch 37 (uneven chunks)", {37, 20, 33}},
      {"9 -> 300 (several tiles of dw), batch 70", {70, 9, 300}},
  };
}

struct DenseData {
  std::vector<float> x, w, b, dy;
};

DenseData dense_data(const DenseGeometry& g, std::uint32_t seed) {
  return {test::random_values(std::size_t(g.n) * g.in, seed),
          test::random_values(std::size_t(g.out) * g.in, seed + 1),
          test::random_values(g.out, seed + 2),
          test::random_values(std::size_t(g.n) * g.out, seed + 3)};
}

std::vector<float> nan_filled(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

const KernelMode kModes[] = {KernelMode::deterministic, KernelMode::nondeterministic};

}  // namespace

TEST_CASE("dense forward matches the reference", "[backend][dense]") {
  for (int threads : {1, 2, 7}) {
    ra::backend::CpuOps ops(threads);
    for (const DenseCase& c : dense_cases()) {
      INFO(c.name << ", " << threads << " threads");
      const DenseGeometry& g = c.g;
      const DenseData d = dense_data(g, 5);
      const auto ax = test::abs_of(d.x), aw = test::abs_of(d.w), ab = test::abs_of(d.b);
      for (const bool with_bias : {true, false}) {
        INFO("bias " << with_bias);
        auto y = nan_filled(std::size_t(g.n) * g.out);
        std::vector<float> expected(y.size()), scale(y.size());
        ops.dense_forward(g, d.x.data(), d.w.data(), with_bias ? d.b.data() : nullptr,
                          ra::backend::Activation::none, y.data());
        ref::dense_forward(g, d.x.data(), d.w.data(), with_bias ? d.b.data() : nullptr,
                           expected.data());
        ref::dense_forward(g, ax.data(), aw.data(), with_bias ? ab.data() : nullptr, scale.data());
        REQUIRE_CLOSE(y, expected, test::sum_rtol(g.in + 1), 0.0, &scale);
      }
    }
  }
}

TEST_CASE("dense backward ops match the reference in both modes", "[backend][dense]") {
  for (int threads : {1, 2, 7}) {
    ra::backend::CpuOps ops(threads);
    for (const DenseCase& c : dense_cases()) {
      const DenseGeometry& g = c.g;
      const DenseData d = dense_data(g, 17);
      const auto ax = test::abs_of(d.x), aw = test::abs_of(d.w), ady = test::abs_of(d.dy);
      std::vector<float> dx_ref(d.x.size()), dx_scale(d.x.size());
      std::vector<float> dw_ref(d.w.size()), dw_scale(d.w.size());
      std::vector<float> db_ref(g.out), db_scale(g.out);
      ref::dense_backward_data(g, d.dy.data(), d.w.data(), dx_ref.data());
      ref::dense_backward_data(g, ady.data(), aw.data(), dx_scale.data());
      ref::dense_backward_weight(g, d.x.data(), d.dy.data(), dw_ref.data());
      ref::dense_backward_weight(g, ax.data(), ady.data(), dw_scale.data());
      ref::dense_backward_bias(g, d.dy.data(), db_ref.data());
      ref::dense_backward_bias(g, ady.data(), db_scale.data());
      for (const KernelMode mode : kModes) {
        INFO(c.name << ", " << threads << " threads, mode " << int(mode));
        auto dx = nan_filled(d.x.size()), dw = nan_filled(d.w.size()), db = nan_filled(g.out);
        ops.dense_backward_data(g, d.dy.data(), d.w.data(), dx.data(), mode);
        ops.dense_backward_weight(g, d.x.data(), d.dy.data(), dw.data(), mode);
        ops.dense_backward_bias(g, d.dy.data(), db.data(), mode);
        REQUIRE_CLOSE(dx, dx_ref, test::sum_rtol(g.out), 0.0, &dx_scale);
        REQUIRE_CLOSE(dw, dw_ref, test::sum_rtol(g.n), 0.0, &dw_scale);
        REQUIRE_CLOSE(db, db_ref, test::sum_rtol(g.n), 0.0, &db_scale);
      }
    }
  }
}

TEST_CASE("dense on a hand-computed case", "[backend][dense]") {
  // x = [1 2], w = [[1 0] [-1 2] [3 1]] (PyTorch [out, in]), b = [0.5 0 -1]:
  // y = [1 + 0.5, -1 + 4, 3 + 2 - 1] = [1.5 3 4].
  const DenseGeometry g{1, 2, 3};
  const std::vector<float> x{1, 2}, w{1, 0, -1, 2, 3, 1}, b{0.5f, 0, -1};
  ra::backend::CpuOps ops(1);
  std::vector<float> y(3);
  ops.dense_forward(g, x.data(), w.data(), b.data(), ra::backend::Activation::none, y.data());
  REQUIRE(y == std::vector<float>{1.5f, 3, 4});
  // dy = [1 -1 2]: dx = dy w = [1 + 1 + 6, 0 - 2 + 2] = [8 0]; dw = dy^T x; db = dy.
  const std::vector<float> dy{1, -1, 2};
  std::vector<float> dx(2), dw(6), db(3);
  ops.dense_backward_data(g, dy.data(), w.data(), dx.data(), KernelMode::deterministic);
  ops.dense_backward_weight(g, x.data(), dy.data(), dw.data(), KernelMode::deterministic);
  ops.dense_backward_bias(g, dy.data(), db.data(), KernelMode::deterministic);
  REQUIRE(dx == std::vector<float>{8, 0});
  REQUIRE(dw == std::vector<float>{1, 2, -1, -2, 2, 4});
  REQUIRE(db == dy);
}

TEST_CASE("dense gradients match central differences", "[backend][dense][gradient]") {
  // L = sum(y * r), y from the reference in double: linear in x, w and b, so central differences
  // are exact up to ~1e-13; 1e-5 covers the fast op's float sums (<= 23 products in [-1, 1]).
  const DenseGeometry g{5, 23, 7};
  const DenseData d = dense_data(g, 3);
  const std::vector<float>& r = d.dy;
  std::vector<double> x = test::to_double(d.x), w = test::to_double(d.w), b = test::to_double(d.b);
  const std::vector<double> rd = test::to_double(r);
  auto objective = [&] {
    std::vector<double> y(std::size_t(g.n) * g.out);
    ref::dense_forward(g, x.data(), w.data(), b.data(), y.data());
    return std::inner_product(y.begin(), y.end(), rd.begin(), 0.0);
  };
  const auto numeric_dx = ra::backend::central_differences(x, 1e-2, objective);
  const auto numeric_dw = ra::backend::central_differences(w, 1e-2, objective);
  const auto numeric_db = ra::backend::central_differences(b, 1e-2, objective);
  ra::backend::CpuOps ops(2);
  for (const KernelMode mode : kModes) {
    std::vector<float> dx(d.x.size()), dw(d.w.size()), db(g.out);
    ops.dense_backward_data(g, r.data(), d.w.data(), dx.data(), mode);
    ops.dense_backward_weight(g, d.x.data(), r.data(), dw.data(), mode);
    ops.dense_backward_bias(g, r.data(), db.data(), mode);
    for (const auto& [name, analytic, numeric] :
         {std::tuple{"dx", &dx, &numeric_dx}, std::tuple{"dw", &dw, &numeric_dw},
          std::tuple{"db", &db, &numeric_db}}) {
      const auto check = ra::backend::compare_gradients(*analytic, *numeric, 1e-5, 1e-5);
      INFO(name << " mode " << int(mode) << " " << check.describe());
      REQUIRE(check.ok);
    }
  }
}
