// Nondeterministic mode on the GPU: each atomic reduction of CudaOps run 20 times on the Keras
// MNIST convnet's shapes. Reports how many distinct results each op gave (a WARN, not a failure,
// when an op happens not to vary: atomics race, they need not race differently every time),
// checks every result against the deterministic path (cuBLAS, fixed trees) within the rounding
// bound of two summation orders of K terms, and checks that the ledger says each op can vary.
// Needs a device: tagged [gpu], skips with the reason when query_device() finds none.
//
// Every upload, op and download is ordered on the backend's own stream (ops->stream()): the
// buffers are filled with cudaMemcpyAsync on it, never through the legacy stream.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/ledger.h"
#include "backend_cuda/gpu_test_support.h"
#include "rng/philox.h"

namespace {

using ra::backend::ConvGeometry;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;
using ra::backend::cuda::CudaOps;

constexpr int kRuns = 20;
constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // fp32: 2^-24

// A device array filled from the host on `stream` (async, then ordered before any later work of
// that stream) and read back on it.
template <class T>
class StreamArray {
 public:
  StreamArray(cudaStream_t stream, const std::vector<T>& host)
      : stream_(stream), size_(host.size()) {
    RA_TEST_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), size_ * sizeof(T)));
    RA_TEST_CUDA(
        cudaMemcpyAsync(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice, stream_));
    RA_TEST_CUDA(cudaStreamSynchronize(stream_));  // `host` may go away after the constructor
  }
  ~StreamArray() { cudaFree(data_); }
  StreamArray(const StreamArray&) = delete;
  StreamArray& operator=(const StreamArray&) = delete;
  T* get() const { return data_; }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    RA_TEST_CUDA(
        cudaMemcpyAsync(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    RA_TEST_CUDA(cudaStreamSynchronize(stream_));
    return host;
  }

 private:
  cudaStream_t stream_;
  std::size_t size_;
  T* data_ = nullptr;
};

std::vector<float> uniform_inputs(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  const ra::rng::PhiloxKey key{seed, 0xa70u};
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = -1.0f + 2.0f * ra::rng::uniform_from_bits(ra::rng::philox_word(key, i, 0));
  }
  return values;
}

// The bound on |a - b| for two fp32 sums of the same K terms in different orders (products
// rounded or fused): 2 gamma_K sum|term|, gamma_K = K u / (1 - K u). Plus a denormal floor.
double order_bound(std::int64_t k, double sum_abs) {
  const double gamma = k * kUnitRoundoff / (1.0 - k * kUnitRoundoff);
  return 2.0 * gamma * sum_abs + 1e-30;
}

struct Outcome {
  std::size_t distinct = 0;
  double worst_ratio = 0;  // max over runs and elements of |nd - det| / bound
};

// Runs `nondet` kRuns times; every result is compared with `det` element by element against
// bound[i], and the distinct bit patterns are counted.
Outcome run_many(const std::function<std::vector<float>()>& nondet, const std::vector<float>& det,
                 const std::vector<double>& bound) {
  std::set<std::size_t> patterns;
  Outcome outcome;
  for (int run = 0; run < kRuns; ++run) {
    const std::vector<float> got = nondet();
    REQUIRE(got.size() == det.size());
    patterns.insert(std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(got.data()), got.size() * sizeof(float))));
    // One assertion per run on its worst element: a million INFO/REQUIRE pairs per run cost
    // 19 s on an H200 and timed out under compute-sanitizer.
    std::size_t worst = 0;
    double worst_ratio = -1.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double ratio = std::abs(double(got[i]) - double(det[i])) / bound[i];
      if (std::isnan(ratio)) {  // a NaN is the worst there is
        worst = i;
        break;
      }
      if (ratio > worst_ratio) worst = i, worst_ratio = ratio;
    }
    INFO("run " << run << ", element " << worst << ": " << got[worst] << " vs deterministic "
                << det[worst] << ", bound " << bound[worst]);
    REQUIRE(std::abs(double(got[worst]) - double(det[worst])) <= bound[worst]);
    outcome.worst_ratio = std::max(outcome.worst_ratio, worst_ratio);
  }
  outcome.distinct = patterns.size();
  return outcome;
}

void report(const std::string& op, const Outcome& outcome) {
  if (outcome.distinct < 2) {
    WARN(op << ": nondeterministic mode gave 1 distinct result in " << kRuns
            << " runs (the atomics did not race differently this time)");
  } else {
    WARN(op << ": " << outcome.distinct << " distinct results in " << kRuns
            << " runs; worst |nd - det| / bound " << outcome.worst_ratio);
  }
}

// Whether the ledger entry of `layer`, `direction` and an algorithm starting with `prefix` says
// deterministic; REQUIREs that there is one.
bool ledger_deterministic(const CudaOps& ops, const std::string& layer,
                          const std::string& direction, const std::string& prefix) {
  const ra::backend::cuda::LedgerEntry* found = nullptr;
  for (const auto& e : ops.ledger_entries()) {
    if (e.layer == layer && e.direction == direction && e.algorithm.rfind(prefix, 0) == 0) {
      found = &e;
    }
  }
  INFO("ledger entry " << layer << " / " << direction << " / " << prefix << "...");
  REQUIRE(found != nullptr);
  return found->deterministic;
}

}  // namespace

TEST_CASE("nondeterministic dense gradients vary and agree with cuBLAS", "[gpu][nondeterminism]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::nondeterministic);
  const cudaStream_t stream = ops->stream();
  const DenseGeometry g{128, 9216, 128};  // Keras MNIST: flatten -> dense 128
  const std::size_t n = g.n, in = g.in, out = g.out;
  const std::vector<float> x = uniform_inputs(n * in, 1), dy = uniform_inputs(n * out, 2),
                           w = uniform_inputs(out * in, 3);
  StreamArray<float> d_x(stream, x), d_dy(stream, dy), d_w(stream, w);
  StreamArray<float> d_dw(stream, std::vector<float>(out * in)),
      d_dx(stream, std::vector<float>(n * in));
  const std::string layer = "dense 128x9216->128";

  SECTION("weight gradient dw = dy^T x, K = batch") {
    std::vector<double> sum_abs(out * in, 0.0);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t i = 0; i < in; ++i)
          sum_abs[o * in + i] += std::abs(double(dy[b * out + o]) * x[b * in + i]);
    std::vector<double> bound(sum_abs.size());
    for (std::size_t i = 0; i < bound.size(); ++i) bound[i] = order_bound(g.n, sum_abs[i]);
    ops->dense_backward_weight(g, d_x.get(), d_dy.get(), d_dw.get(), KernelMode::deterministic);
    const std::vector<float> det = d_dw.download();
    const Outcome outcome = run_many(
        [&] {
          ops->dense_backward_weight(g, d_x.get(), d_dy.get(), d_dw.get(),
                                     KernelMode::nondeterministic);
          RA_TEST_CUDA(cudaGetLastError());
          return d_dw.download();
        },
        det, bound);
    report("dense_backward_weight 128x9216->128", outcome);
    CHECK_FALSE(ledger_deterministic(*ops, layer, "backward_weight",
                                     "ra::kernels::dense_weight_grad_splitk (atomic, 8 slices)"));
    // The deterministic reference is the same kernel in fixed order (4 slices for this shape).
    CHECK(ledger_deterministic(
        *ops, layer, "backward_weight",
        "ra::kernels::dense_weight_grad_fixed (fixed order, 4 slices in order)"));
  }
  SECTION("data gradient dx = dy w, K = out") {
    std::vector<double> sum_abs(n * in, 0.0);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t i = 0; i < in; ++i)
          sum_abs[b * in + i] += std::abs(double(dy[b * out + o]) * w[o * in + i]);
    std::vector<double> bound(sum_abs.size());
    for (std::size_t i = 0; i < bound.size(); ++i) bound[i] = order_bound(g.out, sum_abs[i]);
    ops->dense_backward_data(g, d_dy.get(), d_w.get(), d_dx.get(), KernelMode::deterministic);
    const std::vector<float> det = d_dx.download();
    const Outcome outcome = run_many(
        [&] {
          ops->dense_backward_data(g, d_dy.get(), d_w.get(), d_dx.get(),
                                   KernelMode::nondeterministic);
          RA_TEST_CUDA(cudaGetLastError());
          return d_dx.download();
        },
        det, bound);
    report("dense_backward_data 128x9216->128", outcome);
    CHECK_FALSE(ledger_deterministic(*ops, layer, "backward_data",
                                     "ra::kernels::dense_data_grad_splitk (atomic, 8 slices)"));
  }
}

TEST_CASE("nondeterministic bias gradients vary and agree with the fixed tree",
          "[gpu][nondeterminism]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::nondeterministic);
  const cudaStream_t stream = ops->stream();
  struct Case {
    const char* name;
    int n, k, spatial;
  };
  // Keras MNIST: the two conv biases (26 x 26 and 24 x 24 outputs), the two dense biases.
  const Case cases[] = {{"conv 32 of 26x26", 128, 32, 26 * 26},
                        {"conv 64 of 24x24", 128, 64, 24 * 24},
                        {"dense 128", 128, 128, 1},
                        {"dense 10", 128, 10, 1}};
  for (const Case& c : cases) {
    INFO(c.name);
    const std::size_t items = std::size_t(c.n) * c.spatial;
    const std::vector<float> dy = uniform_inputs(items * c.k, 4);
    std::vector<double> bound(c.k, 0.0);
    for (std::size_t j = 0; j < std::size_t(c.n); ++j)
      for (std::size_t ch = 0; ch < std::size_t(c.k); ++ch)
        for (std::size_t s = 0; s < std::size_t(c.spatial); ++s)
          bound[ch] += std::abs(dy[(j * c.k + ch) * c.spatial + s]);
    for (double& b : bound) b = order_bound(std::int64_t(items), b);
    StreamArray<float> d_dy(stream, dy), d_db(stream, std::vector<float>(c.k));
    ConvGeometry conv;
    conv.n = c.n, conv.c = 1, conv.k = c.k, conv.r = conv.s = 3;
    conv.p = conv.q = static_cast<int>(std::lround(std::sqrt(double(c.spatial))));
    conv.h = conv.w = conv.p + 2;
    const DenseGeometry dense{c.n, 9216, c.k};
    const auto run = [&](KernelMode mode) {
      if (c.spatial == 1) {
        ops->dense_backward_bias(dense, d_dy.get(), d_db.get(), mode);
      } else {
        ops->conv2d_backward_bias(conv, d_dy.get(), d_db.get(), mode);
      }
      RA_TEST_CUDA(cudaGetLastError());
      return d_db.download();
    };
    const std::vector<float> det = run(KernelMode::deterministic);
    report(std::string("bias gradient, ") + c.name,
           run_many([&] { return run(KernelMode::nondeterministic); }, det, bound));
    const std::string layer = c.spatial == 1 ? ra::backend::cuda::dense_geometry_key(dense)
                                             : ra::backend::cuda::conv_geometry_key(conv);
    CHECK_FALSE(
        ledger_deterministic(*ops, layer, "backward_bias", "ra::kernels::bias_backward (atomic"));
    CHECK(ledger_deterministic(*ops, layer, "backward_bias",
                               "ra::kernels::bias_backward (fixed tree"));
  }
}

TEST_CASE("the nondeterministic loss of a batch of 128 varies and agrees with the fixed tree",
          "[gpu][nondeterminism]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::nondeterministic);
  const cudaStream_t stream = ops->stream();
  const int n = 128, classes = 10;
  std::vector<float> logits = uniform_inputs(std::size_t(n) * classes, 5);
  for (float& v : logits) v *= 4.0f;
  std::vector<std::int32_t> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = (i * 7) % classes;
  StreamArray<float> d_logits(stream, logits), d_grad(stream, std::vector<float>(logits.size()));
  StreamArray<std::int32_t> d_labels(stream, labels);
  const auto loss = [&](KernelMode mode) {
    return ops->softmax_cross_entropy(n, classes, d_logits.get(), d_labels.get(), d_grad.get(),
                                      mode);
  };
  const float det = loss(KernelMode::deterministic);
  REQUIRE(det > 0.0f);
  // Row losses are >= 0 and the same in both modes: sum|terms| = n * det (to rounding); the
  // division by n rounds once more in each.
  const double bound = order_bound(n, 1.01 * n * det) / n + 2.0 * det * 2 * kUnitRoundoff;
  const Outcome outcome = run_many(
      [&] { return std::vector<float>{loss(KernelMode::nondeterministic)}; }, {det}, {bound});
  report("softmax_cross_entropy 128x10", outcome);
  const std::string layer = "softmax_cross_entropy 128x10";
  CHECK_FALSE(ledger_deterministic(*ops, layer, "batch_sum",
                                   "ra::kernels::softmax_cross_entropy (atomic, 8 slices)"));
  CHECK(ledger_deterministic(*ops, layer, "batch_sum",
                             "ra::kernels::softmax_cross_entropy (fixed tree)"));
}
