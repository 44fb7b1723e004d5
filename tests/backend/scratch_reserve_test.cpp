// Every per-worker scratch buffer an op's tasks use is reserved for all workers by the calling
// thread before the parallel loop (ScratchArena::reserve_workers), so no worker sizes a buffer
// inside a task: otherwise a worker that first runs a task of an op steps into training would
// allocate there (tests/train/step_allocation_test.cpp). Each CPU op path, 3 threads, every mode.
#include <catch2/catch.hpp>

#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend_test_util.h"

using ra::backend::ConvGeometry;
using ra::backend::DenseGeometry;
using ra::spec::KernelMode;

namespace {

const KernelMode kModes[] = {KernelMode::deterministic, KernelMode::nondeterministic};

}  // namespace

TEST_CASE("conv ops reserve every worker's scratch before their parallel loops", "[backend]") {
  const struct {
    const char* name;
    ConvGeometry g;
  } cases[] = {
      {"3x3 valid (pixel tiles, unpadded)", test::conv(5, 3, 9, 9, 6, 3, 3)},
      {"3x3 same (pixel tiles, padded copy)", test::conv(5, 3, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"3x3 stride 2 pad 1 (gathered tiles, GEMM backward data, tap split)",
       test::conv(5, 4, 9, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1)},
      {"1x1 stride 2 (GEMM + col2im in filter groups)", test::conv(5, 4, 8, 8, 6, 1, 1, 2, 2)},
      {"1x1 (column matrix = image)", test::conv(5, 4, 6, 6, 6, 1, 1)},
  };
  for (const auto& c : cases) {
    const ConvGeometry& g = c.g;
    const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 1);
    const auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 2);
    const auto b = test::random_values(static_cast<std::size_t>(g.k), 3);
    const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 4);
    std::vector<float> y(g.y_size()), dx(g.x_size()), dw(g.w_size()), db(g.k);
    for (const KernelMode mode : kModes) {
      INFO(c.name << ", mode " << int(mode));
      ra::backend::CpuOps ops(3);
      ops.conv2d_forward(g, x.data(), w.data(), b.data(), ra::spec::Activation::relu, y.data());
      CHECK(ops.scratch().late_growths() == 0);
      ops.conv2d_backward_data(g, dy.data(), w.data(), x.data(), dx.data(), mode);
      CHECK(ops.scratch().late_growths() == 0);
      ops.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), mode);
      CHECK(ops.scratch().late_growths() == 0);
      ops.conv2d_backward_bias(g, dy.data(), db.data(), mode);
      ops.conv2d_backward_filter_bias(g, x.data(), dy.data(), dw.data(), db.data(), mode, mode);
      REQUIRE(ops.scratch().late_growths() == 0);
    }
  }
}

TEST_CASE("dense ops reserve every worker's scratch before their parallel loops", "[backend]") {
  for (const DenseGeometry g : {DenseGeometry{7, 300, 50}, DenseGeometry{64, 1000, 128}}) {
    const auto x = test::random_values(static_cast<std::size_t>(g.n) * g.in, 5);
    const auto w = test::random_values(static_cast<std::size_t>(g.out) * g.in, 6);
    const auto dy = test::random_values(static_cast<std::size_t>(g.n) * g.out, 7);
    std::vector<float> y(std::size_t(g.n) * g.out), dx(std::size_t(g.n) * g.in);
    std::vector<float> dw(std::size_t(g.out) * g.in), db(g.out);
    for (const KernelMode mode : kModes) {
      INFO("dense " << g.n << "x" << g.in << "->" << g.out << ", mode " << int(mode));
      ra::backend::CpuOps ops(3);
      ops.dense_forward(g, x.data(), w.data(), nullptr, ra::spec::Activation::none, y.data());
      ops.dense_backward_data(g, dy.data(), w.data(), dx.data(), mode);
      ops.dense_backward_weight(g, x.data(), dy.data(), dw.data(), mode);
      ops.dense_backward_bias(g, dy.data(), db.data(), mode);
      REQUIRE(ops.scratch().late_growths() == 0);
    }
  }
}
