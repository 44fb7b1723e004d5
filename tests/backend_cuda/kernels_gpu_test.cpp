// The custom CUDA kernels (kernels/*.cuh) at the launcher level (the op table, tests/ops, checks
// them through CudaOps, activation_forward and dropout included) against the CPU reference ops
// (backend/cpu/reference/reference_ops.h, double accumulation) and, where the kernels promise the
// CPU backend's exact bits, against a host float twin of the CPU formula. Tolerances are stated per
// case. Deterministic kernels must also give the same bits on 3 calls. Every case needs a device:
// tagged [gpu], each skips with the reason when no usable GPU is present.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>
#include "backend_cuda/gpu_test_support.h"

#include "backend/cpu/reference/reference_ops.h"
#include "backend/modes.h"
#include "kernels/activation.cuh"
#include "kernels/bias.cuh"
#include "kernels/dropout.cuh"
#include "kernels/fill.cuh"
#include "kernels/loss.cuh"
#include "kernels/maxpool.cuh"
#include "rng/philox.h"

namespace {

using ra::backend::Activation;
using ra::backend::ConvGeometry;
using ra::backend::DenseGeometry;
using ra::backend::PoolGeometry;
namespace reference = ra::backend::cpu::reference;
namespace kernels = ra::kernels;

// The kernels take backend::Activation as an int: the constants must follow the enum.
static_assert(kernels::kActivationNone == static_cast<int>(Activation::none));
static_assert(kernels::kActivationRelu == static_cast<int>(Activation::relu));
static_assert(kernels::kActivationTanh == static_cast<int>(Activation::tanh));
static_assert(kernels::kActivationSigmoid == static_cast<int>(Activation::sigmoid));

// After launches: the launch error (bad configuration) and any fault while the stream ran.
#define RA_TEST_SYNC(stream)                     \
  do {                                           \
    RA_TEST_CUDA(cudaGetLastError());            \
    RA_TEST_CUDA(cudaStreamSynchronize(stream)); \
  } while (false)

// Device array of `size` T, filled with 0xFF bytes (NaN for floats) so that an element a kernel
// forgot to write shows up in the comparison. Its fills and copies are queued on the test's stream
// (gpu_test_support.h says why), so they are ordered with the kernels launched there.
template <class T>
class KernelArray {
 public:
  KernelArray(const gpu_test::Stream& stream, std::size_t size) : stream_(stream), size_(size) {
    RA_TEST_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
    stream_.fill_bytes(data_, 0xFF, bytes());
  }
  KernelArray(const gpu_test::Stream& stream, const std::vector<T>& host)
      : KernelArray(stream, host.size()) {
    upload(host);
  }
  ~KernelArray() { cudaFree(data_); }
  KernelArray(const KernelArray&) = delete;
  KernelArray& operator=(const KernelArray&) = delete;

  T* get() const { return data_; }
  std::size_t bytes() const { return size_ * sizeof(T) + (size_ == 0 ? 1 : 0); }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == size_);
    stream_.upload(data_, host.data(), size_ * sizeof(T));
  }
  void zero() { stream_.fill_bytes(data_, 0, size_ * sizeof(T)); }
  // Waits for the stream: everything queued before, kernels included, has finished.
  std::vector<T> download() const {
    std::vector<T> host(size_);
    stream_.download(host.data(), data_, size_ * sizeof(T));
    return host;
  }

 private:
  const gpu_test::Stream& stream_;
  std::size_t size_;
  T* data_ = nullptr;
};

// Reproducible inputs in [lo, hi) from Philox (no dependence on the standard library's
// distributions).
std::vector<float> uniform(std::size_t count, std::uint32_t seed, float lo, float hi) {
  std::vector<float> values(count);
  const ra::rng::PhiloxKey key{seed, 0x5eedu};
  for (std::size_t i = 0; i < count; ++i) {
    values[i] = lo + (hi - lo) * ra::rng::uniform_from_bits(ra::rng::philox_word(key, i, 0));
  }
  return values;
}

std::vector<std::int32_t> labels_for(int n, int classes, std::uint32_t seed) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  const ra::rng::PhiloxKey key{seed, 0x1abe1u};
  for (int i = 0; i < n; ++i) {
    labels[i] = static_cast<std::int32_t>(ra::rng::philox_word(key, i, 0) % classes);
  }
  return labels;
}

std::uint32_t bits_of(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Bitwise equality of two arrays, reporting the first differing element.
template <class T>
void require_same_bits(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      INFO(what << "[" << i << "]: got " << +got[i] << ", want " << +want[i]);
      REQUIRE(false);
    }
  }
}

// |got - want| <= abs_tol + rel_tol * |want| everywhere, reporting the first violation.
void require_close(const std::vector<float>& got, const std::vector<float>& want, double abs_tol,
                   double rel_tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(double(got[i]) - double(want[i]));
    if (!(error <= abs_tol + rel_tol * std::fabs(double(want[i])))) {
      INFO(what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " (tolerance "
                << abs_tol << " + " << rel_tol << " * |want|)");
      REQUIRE(false);
    }
  }
}

float read_scalar(const KernelArray<float>& value) {
  return value.download().at(0);
}

}  // namespace

TEST_CASE("fill writes the value into every element and nothing past the end", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  // 1,300,001 elements: more than the 4096 x 256 threads of the capped grid, so the grid-stride
  // loop runs twice, and not a multiple of 256.
  const std::size_t count = 1300001;
  KernelArray<float> x(stream, count + 1);
  kernels::fill(stream.get(), x.get(), count, -2.5f);
  RA_TEST_SYNC(stream.get());
  std::vector<float> want(count, -2.5f);
  std::vector<float> got = x.download();
  CHECK(std::isnan(got.back()));  // the guard element keeps its 0xFF bytes
  got.pop_back();
  require_same_bits(got, want, "x");
}

TEST_CASE("bias_add adds the bias of channel k to every element of channel k", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const int n = 3, k = 5, spatial = 7 * 6;
  const std::vector<float> y0 = uniform(std::size_t(n) * k * spatial, 1, -1.0f, 1.0f);
  const std::vector<float> bias = uniform(k, 2, -1.0f, 1.0f);
  KernelArray<float> y(stream, y0), b(stream, bias);
  kernels::bias_add(stream.get(), y.get(), b.get(), n, k, spatial);
  RA_TEST_SYNC(stream.get());
  // One float add per element: the host sum is exact up to the same rounding, so bits must match.
  std::vector<float> want = y0;
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < k; ++c)
      for (int s = 0; s < spatial; ++s) want[(std::size_t(i) * k + c) * spatial + s] += bias[c];
  require_same_bits(y.download(), want, "y");
}

TEST_CASE("bias_backward sums dy over batch and positions in both modes", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  struct Case {
    int n, k, spatial;
  };
  // conv-like (spatial 26 x 26, 43,264 items per channel: many slices in nondeterministic mode,
  // 22 fixed slices in two passes in deterministic mode; 128 x 24 x 24 = 73,728: 36; 2,050: 2)
  // and dense-like (spatial 1: one pass).
  const Case cases[] = {
      {64, 6, 26 * 26}, {128, 64, 24 * 24}, {2, 5, 1025}, {129, 10, 1}, {1, 3, 5}};
  for (const Case& c : cases) {
    INFO("n " << c.n << ", k " << c.k << ", spatial " << c.spatial);
    const std::vector<float> dy = uniform(std::size_t(c.n) * c.k * c.spatial, 3, -1.0f, 1.0f);
    std::vector<float> want(c.k);
    if (c.spatial == 1) {
      reference::dense_backward_bias(DenseGeometry{c.n, 1, c.k}, dy.data(), want.data());
    } else {
      ConvGeometry g;
      g.n = c.n, g.k = c.k, g.p = c.spatial, g.q = 1;
      reference::conv2d_backward_bias(g, dy.data(), want.data());
    }
    // Float sums of m terms in [-1, 1] drift by about sqrt(m) * 2^-24 * (partial magnitudes):
    // for m = 43,264, |error| <~ 1e-4 in practice; 1e-3 absolute leaves a margin.
    const double abs_tol = 1e-3;
    KernelArray<float> d_dy(stream, dy), db(stream, c.k);
    KernelArray<unsigned char> workspace(
        stream, kernels::bias_backward_workspace_bytes(c.n, c.k, c.spatial, true));
    std::vector<float> first;
    for (int call = 0; call < 3; ++call) {
      kernels::bias_backward(stream.get(), d_dy.get(), db.get(), c.n, c.k, c.spatial, true,
                             workspace.get());
      RA_TEST_SYNC(stream.get());
      const std::vector<float> got = db.download();
      require_close(got, want, abs_tol, 1e-5, "db (deterministic)");
      if (call == 0) first = got;
      require_same_bits(got, first, "db (deterministic, repeated call)");
    }
    kernels::bias_backward(stream.get(), d_dy.get(), db.get(), c.n, c.k, c.spatial, false,
                           workspace.get());
    RA_TEST_SYNC(stream.get());
    require_close(db.download(), want, abs_tol, 1e-5, "db (nondeterministic)");
  }
}

TEST_CASE("activation_forward works in place", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const std::vector<float> x = uniform(4097, 5, -1.0f, 1.0f);
  std::vector<float> want(x.size());
  reference::activation_forward(Activation::relu, std::int64_t(x.size()), x.data(), want.data());
  KernelArray<float> d_x(stream, x);
  kernels::activation_forward(stream.get(), kernels::kActivationRelu, std::int64_t(x.size()),
                              d_x.get(), d_x.get());
  RA_TEST_SYNC(stream.get());
  require_same_bits(d_x.download(), want, "x");
}

TEST_CASE("activation_backward gives the CPU backend's float bits and the reference's values",
          "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const std::size_t count = 50001;
  const std::vector<float> dy = uniform(count, 6, -2.0f, 2.0f);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::tanh, Activation::sigmoid}) {
    INFO("activation " << static_cast<int>(act));
    // y: outputs the forward can produce (relu >= 0 with exact zeros, tanh in (-1, 1), sigmoid in
    // (0, 1)).
    std::vector<float> y = uniform(count, 7, act == Activation::tanh ? -1.0f : 0.0f, 1.0f);
    if (act == Activation::relu) {
      for (std::size_t i = 0; i < count; i += 3) y[i] = 0.0f;
    }
    // The CPU backend's formulas (cpu_elementwise.cpp), in float, without contraction.
    std::vector<float> cpu_twin(count);
    for (std::size_t i = 0; i < count; ++i) {
      switch (act) {
        case Activation::none:
          cpu_twin[i] = dy[i];
          break;
        case Activation::relu:
          cpu_twin[i] = y[i] > 0.0f ? dy[i] : 0.0f;
          break;
        case Activation::tanh:
          cpu_twin[i] = dy[i] * (1.0f - y[i] * y[i]);
          break;
        case Activation::sigmoid:
          cpu_twin[i] = dy[i] * (y[i] * (1.0f - y[i]));
          break;
      }
    }
    std::vector<float> want(count);
    reference::activation_backward(act, std::int64_t(count), y.data(), dy.data(), want.data());
    KernelArray<float> d_y(stream, y), d_dy(stream, dy), d_dx(stream, count);
    kernels::activation_backward(stream.get(), static_cast<int>(act), std::int64_t(count),
                                 d_y.get(), d_dy.get(), d_dx.get());
    RA_TEST_SYNC(stream.get());
    const std::vector<float> got = d_dx.download();
    require_same_bits(got, cpu_twin, "dx vs CPU formula");
    // Against the double reference: 1 - y*y (or y (1 - y)) carries at most ~2^-23 absolute error
    // in float, times |dy| <= 2, plus the final rounding: 1e-6 absolute covers it.
    require_close(got, want, 1e-6, 1e-6, "dx vs reference");
  }
}

namespace {

enum class LossKind { cross_entropy, squared_error };

float run_loss(cudaStream_t stream, LossKind kind, int n, int classes,
               const KernelArray<float>& rows, const KernelArray<std::int32_t>& labels, float* grad,
               bool deterministic, KernelArray<float>& loss, KernelArray<unsigned char>& workspace,
               KernelArray<int>& flag) {
  flag.zero();  // on the stream, before the launch (the kernels set the flag, never clear it)
  if (kind == LossKind::cross_entropy) {
    kernels::softmax_cross_entropy(stream, n, classes, rows.get(), labels.get(), grad, loss.get(),
                                   deterministic, workspace.get(), flag.get());
  } else {
    kernels::mean_squared_error(stream, n, classes, rows.get(), labels.get(), grad, loss.get(),
                                deterministic, workspace.get(), flag.get());
  }
  RA_TEST_SYNC(stream);
  CHECK(flag.download().at(0) == 0);
  return read_scalar(loss);
}

}  // namespace

TEST_CASE("losses match the reference, deterministic mode bitwise repeatable", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  struct Case {
    int n, classes;
  };
  // One block (128 rows), two blocks (300), and 70,000 rows = 274 partials for the second pass.
  const Case cases[] = {{128, 10}, {300, 7}, {70000, 3}};
  for (LossKind kind : {LossKind::cross_entropy, LossKind::squared_error}) {
    for (const Case& c : cases) {
      INFO((kind == LossKind::cross_entropy ? "cross entropy" : "squared error")
           << ", n " << c.n << ", classes " << c.classes);
      const std::size_t size = std::size_t(c.n) * c.classes;
      const std::vector<float> rows = uniform(size, 10, -6.0f, 6.0f);
      const std::vector<std::int32_t> labels = labels_for(c.n, c.classes, 11);
      std::vector<float> want_grad(size);
      const float want = kind == LossKind::cross_entropy
                             ? reference::softmax_cross_entropy(c.n, c.classes, rows.data(),
                                                                labels.data(), want_grad.data())
                             : reference::mean_squared_error(c.n, c.classes, rows.data(),
                                                             labels.data(), want_grad.data());
      KernelArray<float> d_rows(stream, rows), grad(stream, size), loss(stream, 1);
      KernelArray<std::int32_t> d_labels(stream, labels);
      KernelArray<unsigned char> workspace(stream, kernels::loss_workspace_bytes(c.n, c.classes));
      KernelArray<int> flag(stream, 1);
      // Per row: a few float roundings (expf / logf within 2 ulp); the batch mean sums n rows in
      // float by trees of depth <= log2(70,000) + 2: relative error well under 1e-5.
      float first = 0.0f;
      std::vector<float> first_grad;
      for (int call = 0; call < 3; ++call) {
        const float got = run_loss(stream.get(), kind, c.n, c.classes, d_rows, d_labels, grad.get(),
                                   true, loss, workspace, flag);
        CHECK(std::fabs(double(got) - want) <= 1e-5 * std::fabs(double(want)));
        const std::vector<float> got_grad = grad.download();
        // The label's entry (softmax - 1) / n cancels: float's 2^-24 error of softmax stays
        // absolute, so allow 4 * 2^-24 / n besides 1e-5 relative.
        require_close(got_grad, want_grad, 2.4e-7 / c.n, 1e-5, "gradient (deterministic)");
        if (call == 0) first = got, first_grad = got_grad;
        CHECK(bits_of(got) == bits_of(first));
        require_same_bits(got_grad, first_grad, "gradient (deterministic, repeated call)");
      }
      // Without a gradient: the same loss bits (the rows' sums do not depend on the gradient).
      const float no_grad = run_loss(stream.get(), kind, c.n, c.classes, d_rows, d_labels, nullptr,
                                     true, loss, workspace, flag);
      CHECK(bits_of(no_grad) == bits_of(first));
      const float atomic = run_loss(stream.get(), kind, c.n, c.classes, d_rows, d_labels,
                                    grad.get(), false, loss, workspace, flag);
      CHECK(std::fabs(double(atomic) - want) <= 1e-5 * std::fabs(double(want)));
      // Gradients are per row (one writer): the same bits in either mode.
      require_same_bits(grad.download(), first_grad, "gradient (nondeterministic)");
    }
  }
}

TEST_CASE("losses flag a label outside 0 .. classes - 1", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const int n = 4, classes = 3;
  const std::vector<float> rows = uniform(std::size_t(n) * classes, 12, -1.0f, 1.0f);
  for (std::int32_t bad : {-1, 3}) {
    INFO("bad label " << bad);
    const std::vector<std::int32_t> labels = {0, 2, bad, 1};
    KernelArray<float> d_rows(stream, rows), grad(stream, rows.size()), loss(stream, 1);
    KernelArray<std::int32_t> d_labels(stream, labels);
    KernelArray<unsigned char> workspace(stream, kernels::loss_workspace_bytes(n, classes));
    KernelArray<int> flag(stream, std::vector<int>{0});
    kernels::softmax_cross_entropy(stream.get(), n, classes, d_rows.get(), d_labels.get(),
                                   grad.get(), loss.get(), true, workspace.get(), flag.get());
    RA_TEST_SYNC(stream.get());
    CHECK(flag.download().at(0) == 1);
    flag.upload({0});
    kernels::mean_squared_error(stream.get(), n, classes, d_rows.get(), d_labels.get(), grad.get(),
                                loss.get(), false, workspace.get(), flag.get());
    RA_TEST_SYNC(stream.get());
    CHECK(flag.download().at(0) == 1);
  }
}

namespace {

PoolGeometry pool_geometry(int n, int c, int h, int w, int pool, int stride, int pad_top,
                           int pad_left) {
  PoolGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w;
  g.pool_h = g.pool_w = pool;
  g.stride_h = g.stride_w = stride;
  g.pad_top = pad_top, g.pad_left = pad_left;
  // Windows may hang over the bottom/right edge by the same padding ("same" style).
  g.p = (h + 2 * pad_top - pool) / stride + 1;
  g.q = (w + 2 * pad_left - pool) / stride + 1;
  return g;
}

}  // namespace

TEST_CASE("maxpool forward and backward against the reference", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const PoolGeometry cases[] = {
      pool_geometry(2, 3, 8, 8, 2, 2, 0, 0),    // disjoint windows (the common case)
      pool_geometry(2, 3, 9, 7, 2, 2, 0, 0),    // disjoint, odd: cells in no window
      pool_geometry(2, 2, 10, 11, 2, 3, 0, 0),  // stride > pool: gaps between windows
      pool_geometry(2, 2, 9, 7, 3, 2, 1, 1),    // overlap and padding
      pool_geometry(2, 4, 16, 15, 3, 1, 1, 1),  // stride 1: an input in up to 9 windows
      pool_geometry(1, 2, 4, 4, 2, 2, 2, 0)};   // rows of windows that hold only padding
  for (const PoolGeometry& g : cases) {
    INFO("pool " << g.pool_h << " stride " << g.stride_h << " pad " << g.pad_top << ","
                 << g.pad_left << " on " << g.h << "x" << g.w << " -> " << g.p << "x" << g.q);
    // Values on a coarse grid (multiples of 0.25 in [-1, 1)): many ties, to test the tie rule.
    std::vector<float> x = uniform(std::size_t(g.x_size()), 13, -1.0f, 1.0f);
    for (float& v : x) v = std::floor(v * 4.0f) / 4.0f;
    std::vector<float> want_y(std::size_t(g.y_size()));
    std::vector<std::int32_t> want_argmax(want_y.size());
    reference::maxpool2d_forward(g, x.data(), want_y.data(), want_argmax.data());
    KernelArray<float> d_x(stream, x), d_y(stream, want_y.size());
    KernelArray<std::int32_t> d_argmax(stream, want_y.size());
    kernels::maxpool_forward(stream.get(), g, d_x.get(), d_y.get(), d_argmax.get());
    RA_TEST_SYNC(stream.get());
    require_same_bits(d_y.download(), want_y, "y");
    require_same_bits(d_argmax.download(), want_argmax, "argmax");

    const std::vector<float> dy = uniform(want_y.size(), 14, -1.0f, 1.0f);
    std::vector<float> want_dx(x.size());
    reference::maxpool2d_backward(g, dy.data(), want_argmax.data(), want_dx.data());
    // The CPU backend's deterministic order: dx = 0, then += dy[i] for i in increasing order.
    std::vector<float> cpu_twin(x.size(), 0.0f);
    for (std::size_t i = 0; i < dy.size(); ++i) {
      if (want_argmax[i] >= 0) cpu_twin[std::size_t(want_argmax[i])] += dy[i];
    }
    KernelArray<float> d_dy(stream, dy), d_dx(stream, x.size());
    for (int call = 0; call < 3; ++call) {
      kernels::maxpool_backward(stream.get(), g, d_dy.get(), nullptr, d_argmax.get(), d_dx.get(),
                                true);
      RA_TEST_SYNC(stream.get());
      require_same_bits(d_dx.download(), cpu_twin, "dx (deterministic) vs CPU order");
    }
    // At most 9 float additions per element of values in [-1, 1): 1e-6 absolute.
    require_close(cpu_twin, want_dx, 1e-6, 0.0, "CPU-order dx vs reference");
    kernels::maxpool_backward(stream.get(), g, d_dy.get(), nullptr, d_argmax.get(), d_dx.get(),
                              false);
    RA_TEST_SYNC(stream.get());
    require_close(d_dx.download(), want_dx, 1e-6, 0.0, "dx (nondeterministic)");

    // With a relu gate (the output of the layer before; about half of it <= 0, zeros included):
    // the CPU backend gates each dy as it adds it, gate > 0 ? dy : 0.0f, in the same order.
    std::vector<float> gate = uniform(want_y.size(), 16, -1.0f, 1.0f);
    for (std::size_t i = 0; i < gate.size(); i += 7) gate[i] = 0.0f;
    std::vector<float> gated_twin(x.size(), 0.0f);
    for (std::size_t i = 0; i < dy.size(); ++i) {
      if (want_argmax[i] >= 0) {
        gated_twin[std::size_t(want_argmax[i])] += gate[i] > 0.0f ? dy[i] : 0.0f;
      }
    }
    KernelArray<float> d_gate(stream, gate);
    kernels::maxpool_backward(stream.get(), g, d_dy.get(), d_gate.get(), d_argmax.get(), d_dx.get(),
                              true);
    RA_TEST_SYNC(stream.get());
    require_same_bits(d_dx.download(), gated_twin, "gated dx (deterministic) vs CPU order");
    kernels::maxpool_backward(stream.get(), g, d_dy.get(), d_gate.get(), d_argmax.get(), d_dx.get(),
                              false);
    RA_TEST_SYNC(stream.get());
    require_close(d_dx.download(), gated_twin, 1e-6, 0.0, "gated dx (nondeterministic)");
  }
}

TEST_CASE("a window of padding only gives -inf and argmax -1", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  const PoolGeometry g = pool_geometry(1, 1, 4, 4, 2, 2, 2, 0);  // output row 0 covers rows -2, -1
  const std::vector<float> x = uniform(16, 15, -1.0f, 1.0f);
  KernelArray<float> d_x(stream, x), d_y(stream, std::size_t(g.y_size()));
  KernelArray<std::int32_t> d_argmax(stream, std::size_t(g.y_size()));
  kernels::maxpool_forward(stream.get(), g, d_x.get(), d_y.get(), d_argmax.get());
  RA_TEST_SYNC(stream.get());
  const std::vector<float> y = d_y.download();
  const std::vector<std::int32_t> argmax = d_argmax.download();
  for (int q = 0; q < g.q; ++q) {
    CHECK(y[q] == -std::numeric_limits<float>::infinity());
    CHECK(argmax[q] == -1);
  }
  // Output (1, 0) covers rows 0..1, columns 0..1: hand-computed winner.
  std::int32_t best = 0;
  for (std::int32_t i : {1, 4, 5}) best = x[i] > x[best] ? i : best;
  CHECK(argmax[std::size_t(g.q)] == best);
  CHECK(y[std::size_t(g.q)] == x[best]);
}
