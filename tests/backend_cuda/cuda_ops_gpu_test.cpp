// CudaOps (backend/cuda/cuda_ops.h), every op, against the CPU reference ops
// (backend/cpu/reference_ops.h, double accumulation) on the shapes the CPU backend tests use
// (tests/backend/{conv,dense,pool}_test.cpp), each with its stated tolerance; deterministic ops
// must give the same bits on repeated calls; dropout masks, max-pool results and optimizer updates
// must equal the CPU's bit for bit. All cases need a device: tagged [gpu], each skips with the
// reason when query_device() finds none.
//
// Tolerances (see tests/backend/backend_test_util.h): a float sum of m products in any order is
// within (m + 2) 2^-24 * scale of the exact value, scale = the same op on |inputs|. Pinned cuDNN
// algorithms (implicit GEMM, ALGO_0/1) and cuBLAS sgemm are such sums. Autotuned algorithms may be
// Winograd or FFT, whose transforms add rounding of their own: those cases allow 1e-4 * scale
// (fp32 Winograd F(4x4,3x3) errors are ~1e-5 relative, Lavin & Gray 2016), still far below the O(1)
// error of any indexing mistake.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include "backend_cuda/gpu_test_support.h"

#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/reference_ops.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/device.h"
#include "core/error.h"
#include "optim/update_rules.h"

namespace {

using ra::backend::Activation;
using ra::backend::ConvGeometry;
using ra::backend::CudaOps;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;
using ra::backend::PoolGeometry;
namespace reference = ra::backend::reference;
namespace cuda = ra::backend::cuda;

// A device array in the backend's memory, filled from the host.
template <class T>
class DeviceArray {
 public:
  DeviceArray(ra::Memory& memory, const std::vector<T>& host)
      : memory_(memory), count_(host.size()), data_(memory.allocate(host.size() * sizeof(T))) {
    memory_.upload(data_, host.data(), count_ * sizeof(T));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { memory_.deallocate(data_); }
  T* get() const { return static_cast<T*>(data_); }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    memory_.download(out.data(), data_, count_ * sizeof(T));
    return out;
  }

 private:
  ra::Memory& memory_;
  std::size_t count_;
  void* data_;
};

// Outputs start as NaN: an element an op forgets to write, or accumulates into, fails the check.
DeviceArray<float> nan_array(ra::Memory& memory, std::int64_t count) {
  return DeviceArray<float>(
      memory, std::vector<float>(std::size_t(count), std::numeric_limits<float>::quiet_NaN()));
}

const char* mode_name(KernelMode m) {
  return ra::backend::to_string(m);
}

double conv_rtol(KernelMode forward_or_call_mode, std::int64_t terms) {
  return forward_or_call_mode == KernelMode::autotune ? 1e-4 : test::sum_rtol(terms);
}

using test::ConvCase;

// The CPU tests' cases (tests/backend/backend_test_util.h), plus the first layer of the MNIST
// convnet.
std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases = test::conv_cases();
  cases.push_back({"MNIST conv1", test::conv(128, 1, 28, 28, 32, 3, 3)});
  return cases;
}

}  // namespace

TEST_CASE("CudaOps memory: upload, copy, zero, download", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& memory = ops->memory();
  CHECK_FALSE(memory.host_accessible());
  const auto values = test::random_values(1001, 7);
  DeviceArray<float> a(memory, values), b(memory, std::vector<float>(1001, 5.0f));
  memory.copy(b.get(), a.get(), 1001 * sizeof(float));
  CHECK(test::same_bits(b.host(), values));
  memory.zero(a.get() + 1, 999 * sizeof(float));
  const auto zeroed = a.host();
  CHECK(zeroed[0] == values[0]);
  CHECK(zeroed[1000] == values[1000]);
  for (int i = 1; i < 1000; ++i) REQUIRE(zeroed[std::size_t(i)] == 0.0f);
}

TEST_CASE("CudaOps conv2d against the reference, all modes", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  for (KernelMode mode :
       {KernelMode::deterministic, KernelMode::nondeterministic, KernelMode::autotune}) {
    const auto ops = ra::backend::make_cuda_ops(mode);
    ra::Memory& m = ops->memory();
    for (const ConvCase& c : conv_cases()) {
      const ConvGeometry& g = c.g;
      INFO(c.name << " (" << cuda::conv_geometry_key(g) << "), " << mode_name(mode));
      const auto x = test::random_values(g.x_size(), 1), w = test::random_values(g.w_size(), 2),
                 b = test::random_values(g.k, 3), dy = test::random_values(g.y_size(), 4);
      DeviceArray<float> dx_(m, x), dw_(m, w), db_(m, b), ddy(m, dy);
      auto y = nan_array(m, g.y_size()), gx = nan_array(m, g.x_size()),
           gw = nan_array(m, g.w_size()), gb = nan_array(m, g.k);

      std::vector<float> ref_y(g.y_size()), scale_y(g.y_size()), ref_dx(g.x_size()),
          scale_dx(g.x_size()), ref_dw(g.w_size()), scale_dw(g.w_size()), ref_db(g.k),
          scale_db(g.k);
      const auto ax = test::abs_of(x), aw = test::abs_of(w), ab = test::abs_of(b),
                 ady = test::abs_of(dy);
      reference::conv2d_forward<float>(g, x.data(), w.data(), b.data(), ref_y.data());
      reference::conv2d_forward<float>(g, ax.data(), aw.data(), ab.data(), scale_y.data());
      reference::conv2d_backward_data<float>(g, dy.data(), w.data(), ref_dx.data());
      reference::conv2d_backward_data<float>(g, ady.data(), aw.data(), scale_dx.data());
      reference::conv2d_backward_filter<float>(g, x.data(), dy.data(), ref_dw.data());
      reference::conv2d_backward_filter<float>(g, ax.data(), ady.data(), scale_dw.data());
      reference::conv2d_backward_bias<float>(g, dy.data(), ref_db.data());
      reference::conv2d_backward_bias<float>(g, ady.data(), scale_db.data());

      ops->conv2d_forward(g, dx_.get(), dw_.get(), db_.get(), ra::backend::Activation::none,
                          y.get());
      ops->conv2d_backward_data(g, ddy.get(), dw_.get(), nullptr, gx.get(), mode);
      ops->conv2d_backward_filter(g, dx_.get(), ddy.get(), gw.get(), mode);
      ops->conv2d_backward_bias(g, ddy.get(), gb.get(), mode);
      const std::int64_t pq = std::int64_t(g.p) * g.q;
      const auto out_y = y.host(), out_dx = gx.host(), out_dw = gw.host(), out_db = gb.host();
      REQUIRE_CLOSE(out_y, ref_y, conv_rtol(mode, std::int64_t(g.c) * g.r * g.s + 1), 0, &scale_y);
      REQUIRE_CLOSE(out_dx, ref_dx, conv_rtol(mode, std::int64_t(g.k) * g.r * g.s), 0, &scale_dx);
      REQUIRE_CLOSE(out_dw, ref_dw, conv_rtol(mode, g.n * pq), 0, &scale_dw);
      REQUIRE_CLOSE(out_db, ref_db, test::sum_rtol(g.n * pq), 0, &scale_db);

      // Without bias: the plain convolution.
      std::vector<float> ref_y0(g.y_size());
      reference::conv2d_forward<float>(g, x.data(), w.data(), nullptr, ref_y0.data());
      ops->conv2d_forward(g, dx_.get(), dw_.get(), nullptr, ra::backend::Activation::none, y.get());
      REQUIRE_CLOSE(y.host(), ref_y0, conv_rtol(mode, std::int64_t(g.c) * g.r * g.s), 0, &scale_y);

      if (mode == KernelMode::deterministic) {  // the same bits on every call
        for (int repeat = 0; repeat < 2; ++repeat) {
          ops->conv2d_forward(g, dx_.get(), dw_.get(), db_.get(), ra::backend::Activation::none,
                              y.get());
          ops->conv2d_backward_data(g, ddy.get(), dw_.get(), nullptr, gx.get(), mode);
          ops->conv2d_backward_filter(g, dx_.get(), ddy.get(), gw.get(), mode);
          ops->conv2d_backward_bias(g, ddy.get(), gb.get(), mode);
          REQUIRE(test::same_bits(y.host(), out_y));
          REQUIRE(test::same_bits(gx.host(), out_dx));
          REQUIRE(test::same_bits(gw.host(), out_dw));
          REQUIRE(test::same_bits(gb.host(), out_db));
        }
      }
    }
    // The ledger names what ran, once per geometry and direction.
    const auto ledger = ops->ledger_entries();
    REQUIRE(ledger.size() == 3 * conv_cases().size());
    for (const cuda::LedgerEntry& e : ledger) {
      INFO(e.layer << " " << e.direction << " " << e.algorithm);
      CHECK(e.math_type == "CUDNN_FMA_MATH");
      if (mode == KernelMode::autotune) {
        CHECK(e.chosen_by == "autotuned");
        continue;
      }
      CHECK(e.chosen_by == "pinned");
      const bool nondet = mode == KernelMode::nondeterministic;
      if (e.direction == "forward") {
        CHECK(e.algorithm == "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM");
        CHECK(e.deterministic);
      } else if (e.direction == "backward_data") {
        CHECK(e.algorithm ==
              (nondet ? "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0" : "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1"));
        CHECK(e.deterministic == !nondet);
      } else {
        CHECK(e.direction == "backward_filter");
        CHECK(e.algorithm == (nondet ? "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0"
                                     : "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1"));
        CHECK(e.deterministic == !nondet);
      }
    }
  }
}

TEST_CASE("CudaOps dense against the reference", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const DenseGeometry cases[] = {{1, 1, 1},     {3, 17, 5},   {7, 300, 13}, {33, 65, 129},
                                 {2, 1030, 40}, {37, 20, 33}, {70, 9, 300}};
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& m = ops->memory();
  for (KernelMode mode : {KernelMode::deterministic, KernelMode::nondeterministic}) {
    for (const DenseGeometry& g : cases) {
      INFO(cuda::dense_geometry_key(g) << ", " << mode_name(mode));
      const auto x = test::random_values(std::size_t(g.n) * g.in, 1),
                 w = test::random_values(std::size_t(g.out) * g.in, 2),
                 b = test::random_values(g.out, 3),
                 dy = test::random_values(std::size_t(g.n) * g.out, 4);
      DeviceArray<float> dx_(m, x), dw_(m, w), db_(m, b), ddy(m, dy);
      auto y = nan_array(m, std::int64_t(g.n) * g.out), gx = nan_array(m, std::int64_t(g.n) * g.in),
           gw = nan_array(m, std::int64_t(g.out) * g.in), gb = nan_array(m, g.out);
      const auto ax = test::abs_of(x), aw = test::abs_of(w), ab = test::abs_of(b),
                 ady = test::abs_of(dy);
      std::vector<float> ry(y.host().size()), sy(ry.size()), rdx(x.size()), sdx(x.size()),
          rdw(w.size()), sdw(w.size()), rdb(g.out), sdb(g.out);
      reference::dense_forward<float>(g, x.data(), w.data(), b.data(), ry.data());
      reference::dense_forward<float>(g, ax.data(), aw.data(), ab.data(), sy.data());
      reference::dense_backward_data<float>(g, dy.data(), w.data(), rdx.data());
      reference::dense_backward_data<float>(g, ady.data(), aw.data(), sdx.data());
      reference::dense_backward_weight<float>(g, x.data(), dy.data(), rdw.data());
      reference::dense_backward_weight<float>(g, ax.data(), ady.data(), sdw.data());
      reference::dense_backward_bias<float>(g, dy.data(), rdb.data());
      reference::dense_backward_bias<float>(g, ady.data(), sdb.data());

      ops->dense_forward(g, dx_.get(), dw_.get(), db_.get(), ra::backend::Activation::none,
                         y.get());
      ops->dense_backward_data(g, ddy.get(), dw_.get(), gx.get(), mode);
      ops->dense_backward_weight(g, dx_.get(), ddy.get(), gw.get(), mode);
      ops->dense_backward_bias(g, ddy.get(), gb.get(), mode);
      const auto oy = y.host(), odx = gx.host(), odw = gw.host(), odb = gb.host();
      REQUIRE_CLOSE(oy, ry, test::sum_rtol(g.in + 1), 0, &sy);
      REQUIRE_CLOSE(odx, rdx, test::sum_rtol(g.out), 0, &sdx);
      REQUIRE_CLOSE(odw, rdw, test::sum_rtol(g.n), 0, &sdw);
      REQUIRE_CLOSE(odb, rdb, test::sum_rtol(g.n), 0, &sdb);
      if (mode == KernelMode::deterministic) {
        ops->dense_forward(g, dx_.get(), dw_.get(), db_.get(), ra::backend::Activation::none,
                           y.get());
        ops->dense_backward_data(g, ddy.get(), dw_.get(), gx.get(), mode);
        ops->dense_backward_weight(g, dx_.get(), ddy.get(), gw.get(), mode);
        ops->dense_backward_bias(g, ddy.get(), gb.get(), mode);
        REQUIRE(test::same_bits(y.host(), oy));
        REQUIRE(test::same_bits(gx.host(), odx));
        REQUIRE(test::same_bits(gw.host(), odw));
        REQUIRE(test::same_bits(gb.host(), odb));
      }
    }
  }
  // Every product was noted: an empty ledger would pass the loop below without checking anything.
  const auto& dense_ledger = ops->ledger_entries();
  REQUIRE_FALSE(dense_ledger.empty());
  for (const cuda::LedgerEntry& e : dense_ledger) {
    CHECK(e.algorithm.rfind("cublasSgemm", 0) == 0);
    CHECK(e.math_type == "CUBLAS_DEFAULT_MATH");
  }
}

TEST_CASE("CudaOps max-pooling equals the CPU bit for bit", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const PoolGeometry cases[] = {
      test::pool(2, 3, 8, 8, 2, 2, 2, 2), test::pool(2, 3, 9, 7, 3, 3, 2, 2),
      test::pool(2, 2, 7, 7, 2, 2, 2, 2), test::pool(1, 4, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1),
      test::pool(1, 5, 6, 7, 2, 3, 2, 1), test::pool(5, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1),
  };
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  const auto cpu = ra::backend::make_cpu_ops(1);
  ra::Memory& m = ops->memory();
  for (const PoolGeometry& g : cases) {
    INFO("pool " << g.n << "x" << g.c << "x" << g.h << "x" << g.w << " window " << g.pool_h << "x"
                 << g.pool_w << " stride " << g.stride_h << "x" << g.stride_w);
    // Values with ties (quantized to 1/8) so that the first-maximum rule is exercised too.
    auto x = test::random_values(g.x_size(), 5);
    for (float& v : x) v = std::round(v * 8.0f) / 8.0f;
    const auto dy = test::random_values(g.y_size(), 6);
    std::vector<float> ry(g.y_size());
    std::vector<std::int32_t> rarg(g.y_size());
    reference::maxpool2d_forward<float>(g, x.data(), ry.data(), rarg.data());
    DeviceArray<float> dx_(m, x), ddy(m, dy);
    auto y = nan_array(m, g.y_size()), gx = nan_array(m, g.x_size());
    DeviceArray<std::int32_t> arg(m, std::vector<std::int32_t>(g.y_size(), -7));
    ops->maxpool2d_forward(g, dx_.get(), y.get(), arg.get());
    REQUIRE(test::same_bits(y.host(), ry));
    REQUIRE(arg.host() == rarg);

    std::vector<float> rdx(g.x_size()), cpu_dx(g.x_size());
    reference::maxpool2d_backward<float>(g, dy.data(), rarg.data(), rdx.data());
    cpu->maxpool2d_backward(g, dy.data(), rarg.data(), nullptr, cpu_dx.data(),
                            KernelMode::deterministic);
    const std::vector<float> ady = test::abs_of(dy);
    std::vector<float> scale(g.x_size());
    reference::maxpool2d_backward<float>(g, ady.data(), rarg.data(), scale.data());
    for (KernelMode mode : {KernelMode::deterministic, KernelMode::nondeterministic}) {
      INFO(mode_name(mode));
      ops->maxpool2d_backward(g, ddy.get(), arg.get(), nullptr, gx.get(), mode);
      const auto out = gx.host();
      // At most pool_h * pool_w windows add into one element.
      REQUIRE_CLOSE(out, rdx, test::sum_rtol(std::int64_t(g.pool_h) * g.pool_w), 0, &scale);
      if (mode == KernelMode::deterministic) REQUIRE(test::same_bits(out, cpu_dx));
    }
  }
}

TEST_CASE("CudaOps activations against the reference", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& m = ops->memory();
  const std::int64_t count = 4099;
  const auto x = test::random_values(count, 8, -4.0f, 4.0f), dy = test::random_values(count, 9);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::tanh, Activation::sigmoid}) {
    INFO("activation " << static_cast<int>(act));
    std::vector<float> ry(count), rdx(count);
    reference::activation_forward<float>(act, count, x.data(), ry.data());
    reference::activation_backward<float>(act, count, ry.data(), dy.data(), rdx.data());
    DeviceArray<float> dx_(m, x), dry(m, ry), ddy(m, dy);
    auto y = nan_array(m, count), gx = nan_array(m, count);
    ops->activation_forward(act, count, dx_.get(), y.get());
    ops->activation_backward(act, count, dry.get(), ddy.get(), gx.get());
    // none and relu are exact; tanhf and expf on the device are within 2 ulp (CUDA C Programming
    // Guide, mathematical functions), a few more after sigmoid's division: 1e-6 relative.
    const bool exact = act == Activation::none || act == Activation::relu;
    REQUIRE_CLOSE(y.host(), ry, exact ? 0.0 : 1e-6, exact ? 0.0 : 1e-7, nullptr);
    // The backward rules are products of the same float values: 2 roundings at most apart.
    REQUIRE_CLOSE(gx.host(), rdx, exact ? 0.0 : 4.0 * test::kUnitRoundoff, 0, nullptr);
  }
}

TEST_CASE("CudaOps dropout: the CPU's mask, bit for bit", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& m = ops->memory();
  const std::int64_t count = 10007;  // not a multiple of 4: the last Philox block is partial
  const float rate = 0.25f;
  const std::uint32_t threshold = std::uint32_t(std::lround(rate * 16777216.0));
  const float scale = 1.0f / (1.0f - rate);
  const ra::rng::PhiloxKey key{0x1234u, 0xABCDu};
  const auto x = test::random_values(count, 10), dy = test::random_values(count, 11);
  for (std::uint64_t draw : {0ull, 17ull, (1ull << 40) + 3}) {
    INFO("draw " << draw);
    std::vector<float> ry(count), rdx(count);
    std::vector<std::uint8_t> rmask(count);
    reference::dropout_forward<float>(count, threshold, scale, key, draw, x.data(), ry.data(),
                                      rmask.data());
    reference::dropout_backward<float>(count, scale, rmask.data(), dy.data(), rdx.data());
    DeviceArray<float> dx_(m, x), ddy(m, dy);
    auto y = nan_array(m, count), gx = nan_array(m, count);
    DeviceArray<std::uint8_t> mask(m, std::vector<std::uint8_t>(count, 7));
    ops->dropout_forward(count, threshold, scale, key, draw, dx_.get(), y.get(), mask.get());
    ops->dropout_backward(count, scale, mask.get(), ddy.get(), gx.get());
    REQUIRE(mask.host() == rmask);
    REQUIRE(test::same_bits(y.host(), ry));
    REQUIRE(test::same_bits(gx.host(), rdx));
  }
}

TEST_CASE("CudaOps losses against the reference", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& m = ops->memory();
  struct Shape {
    int n, classes;
  };
  for (Shape s : {Shape{1, 1}, Shape{37, 10}, Shape{128, 10}, Shape{5, 1000}}) {
    INFO("n " << s.n << " classes " << s.classes);
    const std::size_t size = std::size_t(s.n) * s.classes;
    const auto logits = test::random_values(size, 12, -5.0f, 5.0f);
    std::vector<std::int32_t> labels(s.n);
    for (int i = 0; i < s.n; ++i) labels[i] = (i * 7 + 3) % s.classes;
    const std::vector<double> logits_d = test::to_double(logits);
    std::vector<double> rgrad_ce(size), rgrad_mse(size);
    const double rce = reference::softmax_cross_entropy<double>(s.n, s.classes, logits_d.data(),
                                                                labels.data(), rgrad_ce.data());
    const double rmse = reference::mean_squared_error<double>(s.n, s.classes, logits_d.data(),
                                                              labels.data(), rgrad_mse.data());
    DeviceArray<float> dlogits(m, logits);
    DeviceArray<std::int32_t> dlabels(m, labels);
    auto grad = nan_array(m, std::int64_t(size));
    for (KernelMode mode : {KernelMode::deterministic, KernelMode::nondeterministic}) {
      INFO(mode_name(mode));
      // Per-element errors of a few ulp, a sum over n rows (and classes for MSE): 1e-5 relative.
      const float ce = ops->softmax_cross_entropy(s.n, s.classes, dlogits.get(), dlabels.get(),
                                                  grad.get(), mode);
      CHECK(std::abs(double(ce) - rce) <= 1e-5 * std::abs(rce) + 1e-6);
      const auto g_ce = grad.host();
      REQUIRE_CLOSE(g_ce, std::vector<float>(rgrad_ce.begin(), rgrad_ce.end()), 1e-5, 1e-7 / s.n,
                    nullptr);
      const float mse =
          ops->mean_squared_error(s.n, s.classes, dlogits.get(), dlabels.get(), grad.get(), mode);
      CHECK(std::abs(double(mse) - rmse) <= 1e-5 * std::abs(rmse) + 1e-7);
      const auto g_mse = grad.host();
      REQUIRE_CLOSE(g_mse, std::vector<float>(rgrad_mse.begin(), rgrad_mse.end()), 1e-6, 1e-9,
                    nullptr);
      // Value only (evaluation): no gradient, same value.
      CHECK(ops->softmax_cross_entropy(s.n, s.classes, dlogits.get(), dlabels.get(), nullptr,
                                       mode) == Approx(ce).epsilon(1e-6));
      if (mode == KernelMode::deterministic) {
        for (int repeat = 0; repeat < 3; ++repeat) {
          const float again = ops->softmax_cross_entropy(s.n, s.classes, dlogits.get(),
                                                         dlabels.get(), grad.get(), mode);
          REQUIRE(std::memcmp(&again, &ce, sizeof ce) == 0);
          REQUIRE(test::same_bits(grad.host(), g_ce));
        }
      }
    }
  }
  // A label outside [0, classes) is bad input, as on the CPU.
  DeviceArray<float> logits(m, test::random_values(6, 13));
  DeviceArray<std::int32_t> bad(m, std::vector<std::int32_t>{0, 3});
  CHECK_THROWS_AS(
      ops->softmax_cross_entropy(2, 3, logits.get(), bad.get(), nullptr, KernelMode::deterministic),
      ra::InputError);
  CHECK_THROWS_AS(
      ops->mean_squared_error(2, 3, logits.get(), bad.get(), nullptr, KernelMode::deterministic),
      ra::InputError);
}

TEST_CASE("CudaOps optimizer_update equals the host rule bit for bit", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  using ra::optim::RuleKind;
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& m = ops->memory();
  const std::int64_t count = 3001;
  const auto value = test::random_values(count, 14), grad = test::random_values(count, 15);
  const auto s0 = test::random_values(count, 16, 0.0f, 1.0f),
             s1 = test::random_values(count, 17, 0.0f, 1.0f);
  for (RuleKind kind : {RuleKind::sgd, RuleKind::sgd_momentum, RuleKind::adam, RuleKind::rmsprop,
                        RuleKind::adadelta}) {
    INFO("rule " << static_cast<int>(kind));
    ra::optim::UpdateRule rule;
    rule.kind = kind;
    rule.lr = 0.01f, rule.weight_decay = 1e-4f, rule.momentum = 0.9f;
    rule.one_minus_dampening = 1.0f, rule.nesterov = true;
    rule.beta1 = 0.9f, rule.beta2 = 0.999f, rule.one_minus_beta1 = 0.1f;
    rule.one_minus_beta2 = 0.001f, rule.bias_correction2_sqrt = 0.5f;
    rule.rho = 0.95f, rule.one_minus_rho = 0.05f, rule.eps = 1e-7f;
    auto hv = value;
    auto hs0 = s0, hs1 = s1;
    for (std::int64_t i = 0; i < count; ++i)
      ra::optim::apply_update(rule, hv[i], grad[i], &hs0[i], &hs1[i]);
    DeviceArray<float> dv(m, value), dg(m, grad), ds0(m, s0), ds1(m, s1);
    ops->optimizer_update(rule, count, dv.get(), dg.get(), ds0.get(), ds1.get());
    REQUIRE(test::same_bits(dv.host(), hv));
    REQUIRE(test::same_bits(ds0.host(), hs0));
    REQUIRE(test::same_bits(ds1.host(), hs1));
  }
}
