// dense beyond the op table (tests/ops checks every dense op against the reference): a
// hand-computed case and finite differences.
#include <catch2/catch.hpp>

#include <limits>
#include <numeric>

#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;

namespace {

using test::kModes;

struct DenseData {
  std::vector<float> x, w, b, dy;
};

DenseData dense_data(const DenseGeometry& g, std::uint32_t seed) {
  return {test::random_values(std::size_t(g.n) * g.in, seed),
          test::random_values(std::size_t(g.out) * g.in, seed + 1),
          test::random_values(g.out, seed + 2),
          test::random_values(std::size_t(g.n) * g.out, seed + 3)};
}

}  // namespace

TEST_CASE("dense on a hand-computed case", "[backend][dense]") {
  // x = [1 2], w = [[1 0] [-1 2] [3 1]] (PyTorch [out, in]), b = [0.5 0 -1]:
  // y = [1 + 0.5, -1 + 4, 3 + 2 - 1] = [1.5 3 4].
  const DenseGeometry g{1, 2, 3};
  const std::vector<float> x{1, 2}, w{1, 0, -1, 2, 3, 1}, b{0.5f, 0, -1};
  ra::backend::cpu::CpuOps ops(1);
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
  ra::backend::cpu::CpuOps ops(2);
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
