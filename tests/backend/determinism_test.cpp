// The central promise (docs/determinism.md, "Kernel modes (per op)"): in deterministic mode every
// reducing op gives the same bits for 1, 2, 3 and 7 threads and on every repeated call; in
// nondeterministic mode it agrees with the deterministic result within rounding. Shapes are
// large enough for many reduction chunks, GEMM tiles and split-k parts.
#include <catch2/catch.hpp>

#include <functional>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend_test_util.h"
#include "core/error.h"

namespace ref = ra::backend::cpu::reference;
using ra::backend::KernelMode;
using ra::backend::Ops;

namespace {

struct ReducingCase {
  std::string name;
  std::function<std::vector<float>(Ops&, KernelMode)> run;
  std::vector<float> scale;  // sum of |terms| of each output (see backend_test_util.h)
  double rtol;
};

std::vector<ReducingCase> reducing_cases() {
  std::vector<ReducingCase> cases;
  {
    const auto g = test::conv(37, 5, 9, 9, 12, 3, 3, 1, 1, 1, 1, 1, 1);
    const auto x = test::random_values(g.x_size(), 1), w = test::random_values(g.w_size(), 2);
    const auto dy = test::random_values(g.y_size(), 3);
    const auto ax = test::abs_of(x), aw = test::abs_of(w), ady = test::abs_of(dy);
    std::vector<float> sdw(g.w_size()), sdb(g.k), sdx(g.x_size());
    ref::conv2d_backward_filter(g, ax.data(), ady.data(), sdw.data());
    ref::conv2d_backward_bias(g, ady.data(), sdb.data());
    ref::conv2d_backward_data(g, ady.data(), aw.data(), sdx.data());
    const std::int64_t batch_terms = std::int64_t(g.n) * g.p * g.q;
    cases.push_back({"conv2d.backward_filter",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> dw(g.w_size());
                       ops.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), mode);
                       return dw;
                     },
                     sdw, test::sum_rtol(batch_terms)});
    cases.push_back({"conv2d.backward_bias",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> db(g.k);
                       ops.conv2d_backward_bias(g, dy.data(), db.data(), mode);
                       return db;
                     },
                     sdb, test::sum_rtol(batch_terms)});
    cases.push_back({"conv2d.backward_data",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> dx(g.x_size());
                       ops.conv2d_backward_data(g, dy.data(), w.data(), nullptr, dx.data(), mode);
                       return dx;
                     },
                     sdx, test::sum_rtol(std::int64_t(g.k) * g.r * g.s)});
  }
  {
    const ra::backend::DenseGeometry g{70, 300, 300};
    const auto x = test::random_values(std::size_t(g.n) * g.in, 4);
    const auto w = test::random_values(std::size_t(g.out) * g.in, 5);
    const auto dy = test::random_values(std::size_t(g.n) * g.out, 6);
    const auto ax = test::abs_of(x), aw = test::abs_of(w), ady = test::abs_of(dy);
    std::vector<float> sdw(w.size()), sdb(g.out), sdx(x.size());
    ref::dense_backward_weight(g, ax.data(), ady.data(), sdw.data());
    ref::dense_backward_bias(g, ady.data(), sdb.data());
    ref::dense_backward_data(g, ady.data(), aw.data(), sdx.data());
    cases.push_back({"dense.backward_weight",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> dw(w.size());
                       ops.dense_backward_weight(g, x.data(), dy.data(), dw.data(), mode);
                       return dw;
                     },
                     sdw, test::sum_rtol(g.n)});
    cases.push_back({"dense.backward_bias",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> db(g.out);
                       ops.dense_backward_bias(g, dy.data(), db.data(), mode);
                       return db;
                     },
                     sdb, test::sum_rtol(g.n)});
    cases.push_back({"dense.backward_data",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> dx(x.size());
                       ops.dense_backward_data(g, dy.data(), w.data(), dx.data(), mode);
                       return dx;
                     },
                     sdx, test::sum_rtol(g.out)});
  }
  {
    const auto g = test::pool(6, 7, 17, 17, 3, 3, 2, 2);  // overlapping windows
    const auto x = test::random_values(g.x_size(), 7), dy = test::random_values(g.y_size(), 8);
    std::vector<float> y(g.y_size());
    std::vector<std::int32_t> argmax(g.y_size());
    ref::maxpool2d_forward(g, x.data(), y.data(), argmax.data());
    const auto ady = test::abs_of(dy);
    std::vector<float> sdx(g.x_size());
    ref::maxpool2d_backward(g, ady.data(), argmax.data(), sdx.data());
    cases.push_back({"maxpool2d.backward",
                     [=](Ops& ops, KernelMode mode) {
                       std::vector<float> dx(g.x_size());
                       ops.maxpool2d_backward(g, dy.data(), argmax.data(), nullptr, dx.data(),
                                              mode);
                       return dx;
                     },
                     sdx, test::sum_rtol(4)});
  }
  {
    const int n = 100, classes = 10;
    const auto logits = test::random_values(std::size_t(n) * classes, 9, -3.0f, 3.0f);
    std::vector<std::int32_t> labels(n);
    for (int i = 0; i < n; ++i) labels[i] = (i * 3) % classes;
    for (const bool ce : {true, false}) {
      // Output: the loss followed by its gradient. The loss sums n positive row losses, so its
      // own magnitude is the scale; gradients are per row (no reduction).
      std::vector<float> probe(1 + logits.size());
      probe[0] =
          ce ? ref::softmax_cross_entropy(n, classes, logits.data(), labels.data(),
                                          probe.data() + 1)
             : ref::mean_squared_error(n, classes, logits.data(), labels.data(), probe.data() + 1);
      cases.push_back({ce ? "softmax_cross_entropy" : "mean_squared_error",
                       [=](Ops& ops, KernelMode mode) {
                         std::vector<float> out(1 + logits.size());
                         out[0] =
                             ce ? ops.softmax_cross_entropy(n, classes, logits.data(),
                                                            labels.data(), out.data() + 1, mode)
                                : ops.mean_squared_error(n, classes, logits.data(), labels.data(),
                                                         out.data() + 1, mode);
                         return out;
                       },
                       test::abs_of(probe), 1e-5});
    }
  }
  return cases;
}

}  // namespace

TEST_CASE("deterministic reducing ops give the same bits for any thread count",
          "[backend][determinism]") {
  ra::backend::cpu::CpuOps single(1);
  for (const ReducingCase& c : reducing_cases()) {
    INFO(c.name);
    const std::vector<float> baseline = c.run(single, KernelMode::deterministic);
    for (int threads : {1, 2, 3, 7}) {
      INFO(threads << " threads");
      ra::backend::cpu::CpuOps ops(threads);
      REQUIRE(test::same_bits(c.run(ops, KernelMode::deterministic), baseline));
      // Between the two calls a nondeterministic call dirties the scratch buffers.
      c.run(ops, KernelMode::nondeterministic);
      REQUIRE(test::same_bits(c.run(ops, KernelMode::deterministic), baseline));
    }
  }
}

TEST_CASE("nondeterministic reducing ops agree with deterministic ones within rounding",
          "[backend][determinism]") {
  ra::backend::cpu::CpuOps single(1);
  for (const ReducingCase& c : reducing_cases()) {
    INFO(c.name);
    const std::vector<float> deterministic = c.run(single, KernelMode::deterministic);
    for (int threads : {1, 2, 3, 7}) {
      INFO(threads << " threads");
      ra::backend::cpu::CpuOps ops(threads);
      for (int repeat = 0; repeat < 3; ++repeat) {
        // Both results are within (m + 1) u * scale of the exact sum, so within twice that of
        // each other. Whether the bits differ is left to chance and never asserted.
        REQUIRE_CLOSE(c.run(ops, KernelMode::nondeterministic), deterministic, 2 * c.rtol, 0.0,
                      &c.scale);
      }
    }
  }
}

TEST_CASE("forward ops give the same bits for any thread count", "[backend][determinism]") {
  const auto cg = test::conv(9, 6, 12, 12, 10, 3, 3, 2, 2, 0, 0, 1, 1);
  const auto x = test::random_values(cg.x_size(), 10), w = test::random_values(cg.w_size(), 11);
  const auto b = test::random_values(cg.k, 12);
  const ra::backend::DenseGeometry dg{50, 333, 77};
  const auto dx = test::random_values(std::size_t(dg.n) * dg.in, 13);
  const auto dw = test::random_values(std::size_t(dg.out) * dg.in, 14);
  const auto db = test::random_values(dg.out, 16);
  const auto pg = test::pool(4, 9, 15, 15, 3, 3, 2, 2);
  const auto px = test::random_values(pg.x_size(), 15);
  auto run = [&](Ops& ops) {
    std::vector<float> out(cg.y_size() + std::size_t(dg.n) * dg.out + pg.y_size());
    std::vector<std::int32_t> argmax(pg.y_size());
    ops.conv2d_forward(cg, x.data(), w.data(), b.data(), ra::backend::Activation::none, out.data());
    float* dense_out = out.data() + cg.y_size();
    ops.dense_forward(dg, dx.data(), dw.data(), db.data(), ra::backend::Activation::none,
                      dense_out);
    ops.maxpool2d_forward(pg, px.data(), dense_out + dg.n * dg.out, argmax.data());
    return std::pair{out, argmax};
  };
  ra::backend::cpu::CpuOps single(1);
  const auto baseline = run(single);
  for (int threads : {2, 3, 7}) {
    INFO(threads << " threads");
    ra::backend::cpu::CpuOps ops(threads);
    const auto result = run(ops);
    REQUIRE(test::same_bits(result.first, baseline.first));
    REQUIRE(result.second == baseline.second);
  }
}

TEST_CASE("CpuOps reports itself and rejects a bad thread count", "[backend]") {
  ra::backend::cpu::CpuOps ops(3);
  REQUIRE(ops.name() == "cpu");
  REQUIRE(ops.threads() == 3);
  REQUIRE(ra::backend::cpu::make_cpu_ops(2)->threads() == 2);
  REQUIRE_THROWS_AS(ra::backend::cpu::CpuOps(0), ra::InputError);
}
