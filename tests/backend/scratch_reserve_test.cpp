// Every per-worker scratch buffer an op's tasks use is reserved for all workers by the calling
// thread before the parallel loop (ScratchArena::reserve_workers), so no worker sizes a buffer
// inside a task: otherwise a worker that first runs a task of an op steps into training would
// allocate there (tests/train/step_allocation_test.cpp). Each CPU op path, 3 threads, every mode.
//
// Each op call gets a fresh CpuOps: in one shared arena an earlier op's reservation of the same
// buffer hides a missing reserve call of a later op (the forward reserves `columns` at least as
// large as the backward filter asks for; parallel_gemm reserves the packing panels split-k uses).
// Checked by skipping each of the 18 reserve call sites in turn: every skip fails a case here
// (with one arena for all ops, 3 went unnoticed, the pooled forward's among them), whichever
// worker runs the tasks, since the first worker() request for an unreserved buffer grows it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend_test_util.h"
#include "backend/cpu/conv/direct_conv.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm/parallel_gemm.h"
#include "backend/cpu/runtime/scratch.h"
#include "backend_test_util.h"
#include "core/thread_pool.h"

using ra::backend::ConvGeometry;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;
using ra::backend::cpu::CpuOps;

namespace {

using test::kModes;

constexpr int kThreads = 3;
// The late growths one op call makes on a fresh CpuOps of kThreads threads.
std::int64_t late_growths_of(const std::function<void(CpuOps&)>& call) {
  CpuOps ops(kThreads);
  call(ops);
  return ops.scratch().late_growths();
}

}  // namespace

TEST_CASE("ScratchArena counts the worker buffers grown inside a task", "[backend]") {
  using ra::backend::cpu::ScratchArena;
  using ra::backend::cpu::WorkerBuffer;
  ScratchArena scratch(kThreads);
  scratch.reserve_workers(WorkerBuffer::partial, 100);
  for (int w = 0; w < kThreads; ++w)
    REQUIRE(scratch.worker(w, WorkerBuffer::partial, 100) != nullptr);
  REQUIRE(scratch.worker(1, WorkerBuffer::partial, 60) != nullptr);  // smaller: reused
  REQUIRE(scratch.late_growths() == 0);
  // Unreserved, and larger than reserved: grown anyway (never wrong, only late), and counted.
  REQUIRE(scratch.worker(2, WorkerBuffer::column_matrix, 10) != nullptr);
  REQUIRE(scratch.worker(0, WorkerBuffer::partial, 101) != nullptr);
  REQUIRE(scratch.late_growths() == 2);
  REQUIRE(scratch.worker(0, WorkerBuffer::partial, 101) != nullptr);  // now big enough
  REQUIRE(scratch.late_growths() == 2);
}

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
  int pooled_cases = 0;
  for (const auto& c : cases) {
    const ConvGeometry& g = c.g;
    const auto x = test::random_values(static_cast<std::size_t>(g.x_size()), 1);
    const auto w = test::random_values(static_cast<std::size_t>(g.w_size()), 2);
    const auto b = test::random_values(static_cast<std::size_t>(g.k), 3);
    const auto dy = test::random_values(static_cast<std::size_t>(g.y_size()), 4);
    std::vector<float> y(g.y_size()), dx(g.x_size()), dw(g.w_size()), db(g.k);
    INFO(c.name);
    CHECK(late_growths_of([&](CpuOps& ops) {
            ops.conv2d_forward(g, x.data(), w.data(), b.data(), ra::backend::Activation::relu,
                               y.data());
          }) == 0);
    // The pooled forward (worker buffer image_output) where the backend fuses the pair.
    const auto pg = test::pool(g.n, g.k, g.p, g.q, 2, 2, 2, 2);
    if (ra::backend::cpu::fuses_maxpool(g, pg)) {
      ++pooled_cases;
      std::vector<float> pooled(pg.y_size());
      std::vector<std::int32_t> argmax(pg.y_size());
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_forward_maxpool(g, x.data(), w.data(), b.data(),
                                         ra::backend::Activation::relu, pg, y.data(), pooled.data(),
                                         argmax.data());
            }) == 0);
      // Its backward (worker buffer unpooled_gradient), from the argmax just computed.
      const auto pooled_dy = test::random_values(static_cast<std::size_t>(pg.y_size()), 9);
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_backward_maxpool(g, pg, {pooled_dy.data(), argmax.data(), pooled.data()},
                                          x.data(), w.data(), x.data(), y.data(), dx.data(),
                                          dw.data(), db.data(), {});
            }) == 0);
    }
    for (const KernelMode mode : kModes) {
      INFO("mode " << int(mode));
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_backward_data(g, dy.data(), w.data(), x.data(), dx.data(), mode);
            }) == 0);
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), mode);
            }) == 0);
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_backward_bias(g, dy.data(), db.data(), mode);
            }) == 0);
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.conv2d_backward_filter_bias(g, x.data(), dy.data(), dw.data(), db.data(), mode,
                                              mode);
            }) == 0);
    }
  }
  REQUIRE(pooled_cases > 0);  // the pooled path ran (it alone uses image_output)
}

TEST_CASE("dense ops reserve every worker's scratch before their parallel loops", "[backend]") {
  for (const DenseGeometry g : {DenseGeometry{7, 300, 50}, DenseGeometry{64, 1000, 128}}) {
    const auto x = test::random_values(static_cast<std::size_t>(g.n) * g.in, 5);
    const auto w = test::random_values(static_cast<std::size_t>(g.out) * g.in, 6);
    const auto dy = test::random_values(static_cast<std::size_t>(g.n) * g.out, 7);
    std::vector<float> y(std::size_t(g.n) * g.out), dx(std::size_t(g.n) * g.in);
    std::vector<float> dw(std::size_t(g.out) * g.in), db(g.out);
    INFO("dense " << g.n << "x" << g.in << "->" << g.out);
    const auto b = test::random_values(static_cast<std::size_t>(g.out), 8);
    CHECK(late_growths_of([&](CpuOps& ops) {
            ops.dense_forward(g, x.data(), w.data(), b.data(), ra::backend::Activation::relu,
                              y.data());
          }) == 0);
    for (const KernelMode mode : kModes) {
      INFO("mode " << int(mode));
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.dense_backward_data(g, dy.data(), w.data(), dx.data(), mode);
            }) == 0);
      CHECK(late_growths_of([&](CpuOps& ops) {
              ops.dense_backward_weight(g, x.data(), dy.data(), dw.data(), mode);
            }) == 0);
      CHECK(late_growths_of(
                [&](CpuOps& ops) { ops.dense_backward_bias(g, dy.data(), db.data(), mode); }) == 0);
    }
  }
}

TEST_CASE("parallel GEMMs reserve every worker's scratch for each instruction set", "[backend]") {
  // The tile grids (and so the split-k partial tiles) follow the variant's register tiles: every
  // variant this CPU runs, not only the one the process picked.
  using namespace ra::backend::cpu;
  const std::int64_t m = 70, n = 600, k = 300;
  const auto a = test::random_values(std::size_t(m * k), 9);
  const auto bm = test::random_values(std::size_t(k * n), 10);
  std::vector<float> c(std::size_t(m * n));
  for (const Isa isa : test::supported_isas()) {
    INFO(isa_name(isa));
    ra::ThreadPool pool(kThreads);
    {
      ScratchArena scratch(kThreads);
      parallel_gemm(pool, scratch, m, n, k, row_major(a.data(), k), row_major(bm.data(), n),
                    c.data(), n, GemmOutput::overwrite, isa);
      CHECK(scratch.late_growths() == 0);
    }
    {
      ScratchArena scratch(kThreads);
      parallel_gemm_split_k_atomic(pool, scratch, m, n, k, row_major(a.data(), k),
                                   row_major(bm.data(), n), c.data(), n, isa);
      CHECK(scratch.late_growths() == 0);
    }
  }
}
