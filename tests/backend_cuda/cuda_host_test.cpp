// The host side of the CUDA backend that needs no GPU: status names, the CudaError message, the
// algorithm policy table, ledger JSON and names, the asymmetric-padding split (checked against
// the CPU reference convolution), the version strings, and how the backend refuses to start on a
// machine without a usable GPU. Runs everywhere, CI included.
#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend_test_util.h"
#include "backend/cpu/reference/reference_ops.h"
#include "backend/cuda/algorithm_policy.h"
#include "backend/cuda/conv_plan.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/device.h"
#include "backend/cuda/ledger.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::backend::ConvGeometry;
using ra::backend::KernelMode;
namespace reference = ra::backend::cpu::reference;
using ra::test::contains;

cudnnStatus_t fake_cudnn_call(cudnnStatus_t result) {
  return result;
}
cublasStatus_t fake_cublas_call(cublasStatus_t result) {
  return result;
}
cudaError_t fake_cuda_call(cudaError_t result) {
  return result;
}

}  // namespace

TEST_CASE("status names of the three libraries", "[cuda][host]") {
  CHECK(cudnn_status_name(CUDNN_STATUS_SUCCESS) == "CUDNN_STATUS_SUCCESS");
  CHECK(cudnn_status_name(CUDNN_STATUS_NOT_SUPPORTED) == "CUDNN_STATUS_NOT_SUPPORTED");
  CHECK(cudnn_status_name(CUDNN_STATUS_BAD_PARAM) == "CUDNN_STATUS_BAD_PARAM");

  const std::pair<cublasStatus_t, const char*> cublas[] = {
      {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH"},
      {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
      {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR"},
  };
  for (const auto& [status, name] : cublas) CHECK(cublas_status_name(status) == name);
  CHECK(cublas_status_name(static_cast<cublasStatus_t>(999)) == "cuBLAS status 999");

  CHECK(cuda_status_name(cudaSuccess) == "cudaSuccess");
  CHECK(cuda_status_name(cudaErrorMemoryAllocation) == "cudaErrorMemoryAllocation");
  CHECK(cuda_status_name(cudaErrorInsufficientDriver) == "cudaErrorInsufficientDriver");
  CHECK(cuda_status_text(cudaErrorMemoryAllocation) == "out of memory");
}

TEST_CASE("the check macros throw a CudaError naming the call, file:line and status",
          "[cuda][host]") {
  SECTION("success throws nothing") {
    CHECK_NOTHROW(RA_CUDNN_CHECK(fake_cudnn_call(CUDNN_STATUS_SUCCESS)));
    CHECK_NOTHROW(RA_CUBLAS_CHECK(fake_cublas_call(CUBLAS_STATUS_SUCCESS)));
    CHECK_NOTHROW(RA_CUDA_CHECK(fake_cuda_call(cudaSuccess)));
  }
  SECTION("cuDNN") {
    const int line = __LINE__ + 2;
    try {
      RA_CUDNN_CHECK(fake_cudnn_call(CUDNN_STATUS_NOT_SUPPORTED));
      FAIL("no exception");
    } catch (const CudaError& e) {
      CHECK(e.call() == "fake_cudnn_call(CUDNN_STATUS_NOT_SUPPORTED)");
      CHECK(contains(e.location(), "cuda_host_test.cpp:" + std::to_string(line)));
      CHECK(e.status_name() == "CUDNN_STATUS_NOT_SUPPORTED");
      CHECK(std::string(e.what()) == "fake_cudnn_call(CUDNN_STATUS_NOT_SUPPORTED) failed at " +
                                         e.location() + ": CUDNN_STATUS_NOT_SUPPORTED");
    }
  }
  SECTION("cuBLAS") {
    try {
      RA_CUBLAS_CHECK(fake_cublas_call(CUBLAS_STATUS_ARCH_MISMATCH));
      FAIL("no exception");
    } catch (const CudaError& e) {
      CHECK(e.call() == "fake_cublas_call(CUBLAS_STATUS_ARCH_MISMATCH)");
      CHECK(contains(e.what(), "fake_cublas_call(CUBLAS_STATUS_ARCH_MISMATCH) failed at "));
      CHECK(contains(e.what(), ": CUBLAS_STATUS_ARCH_MISMATCH"));
    }
  }
  SECTION("CUDA runtime, with the status text; a CudaError is a RuntimeFailure (exit 3)") {
    try {
      RA_CUDA_CHECK(fake_cuda_call(cudaErrorMemoryAllocation));
      FAIL("no exception");
    } catch (const ra::RuntimeFailure& e) {
      CHECK(contains(e.what(), "fake_cuda_call(cudaErrorMemoryAllocation) failed at "));
      CHECK(contains(e.what(), ": cudaErrorMemoryAllocation (out of memory)"));
    }
  }
}

TEST_CASE("algorithm policy: every mode and direction", "[cuda][host]") {
  using D = ConvDirection;
  enum class Rule { pinned, heuristic, autotune };
  struct Row {
    KernelMode mode;
    D direction;
    Rule rule;
    int algorithm;  // for pinned rows
  };
  const Row table[] = {
      // Deterministic mode: cuDNN's heuristic ranking, first deterministic fp32 FMA result
      // (conv_heuristic.h), in every direction.
      {KernelMode::deterministic, D::forward, Rule::heuristic, 0},
      {KernelMode::deterministic, D::backward_data, Rule::heuristic, 0},
      {KernelMode::deterministic, D::backward_filter, Rule::heuristic, 0},
      {KernelMode::nondeterministic, D::forward, Rule::pinned,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
      {KernelMode::nondeterministic, D::backward_data, Rule::pinned,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0},
      {KernelMode::nondeterministic, D::backward_filter, Rule::pinned,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0},
      {KernelMode::autotune, D::forward, Rule::autotune, 0},
      {KernelMode::autotune, D::backward_data, Rule::autotune, 0},
      {KernelMode::autotune, D::backward_filter, Rule::autotune, 0},
      // Batch-invariant mode: the per-sample directions pinned whatever the batch size, the
      // filter gradient (a sum over the batch) the deterministic heuristic's.
      {KernelMode::batch_invariant, D::forward, Rule::pinned,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
      {KernelMode::batch_invariant, D::backward_data, Rule::pinned,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_1},
      {KernelMode::batch_invariant, D::backward_filter, Rule::heuristic, 0},
  };
  for (const Row& row : table) {
    INFO(ra::backend::to_string(row.mode) << " " << to_string(row.direction));
    const ConvAlgorithmPolicy policy = conv_algorithm_policy(row.mode, row.direction);
    CHECK(policy.autotune == (row.rule == Rule::autotune));
    CHECK(policy.heuristic == (row.rule == Rule::heuristic));
    if (row.rule == Rule::pinned) {
      CHECK(policy.algorithm == row.algorithm);
      // Nondeterministic mode pins the atomic algorithms wherever cuDNN has one (forward has
      // none); batch-invariant mode only deterministic ones.
      CHECK(cudnn_algorithm_is_deterministic(row.direction, policy.algorithm) ==
            (row.direction == D::forward || row.mode == KernelMode::batch_invariant));
    }
    CHECK(policy.math == CUDNN_FMA_MATH);  // no TF32 in any mode
  }
  CHECK_FALSE(
      cudnn_algorithm_is_deterministic(D::backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
  CHECK(
      cudnn_algorithm_is_deterministic(D::backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT));
  CHECK(cudnn_algorithm_is_deterministic(D::forward, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD));

  CHECK(cublas_policy(KernelMode::nondeterministic).atomics == CUBLAS_ATOMICS_ALLOWED);
  CHECK(cublas_policy(KernelMode::deterministic).atomics == CUBLAS_ATOMICS_NOT_ALLOWED);
  CHECK(cublas_policy(KernelMode::autotune).atomics == CUBLAS_ATOMICS_NOT_ALLOWED);
  CHECK(cublas_policy(KernelMode::batch_invariant).atomics == CUBLAS_ATOMICS_NOT_ALLOWED);
  for (KernelMode m : {KernelMode::deterministic, KernelMode::nondeterministic,
                       KernelMode::autotune, KernelMode::batch_invariant}) {
    CHECK(cublas_policy(m).math == CUBLAS_DEFAULT_MATH);
  }
  CHECK(kernels_deterministic(KernelMode::deterministic));
  CHECK(kernels_deterministic(KernelMode::autotune));
  CHECK(kernels_deterministic(KernelMode::batch_invariant));
  CHECK_FALSE(kernels_deterministic(KernelMode::nondeterministic));
}

TEST_CASE("ledger: JSON and names", "[cuda][host]") {
  const std::vector<LedgerEntry> entries = {
      {"conv 128x1x28x28 k32 3x3 s1 p0", "backward_filter", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0",
       false, "CUDNN_FMA_MATH", 4096, "pinned", std::nullopt},
      {"conv 128x32x26x26 k64 3x3 s1 p0", "forward", "CUDNN_CONVOLUTION_FWD_ALGO_GEMM", true,
       "CUDNN_FMA_MATH", 33554432, "autotuned",
       AutotuneMeasurement{"CUDNN_FMA_MATH", 0.5, 33554432}},
  };
  const nlohmann::json expected = nlohmann::json::parse(R"([
    {"layer": "conv 128x1x28x28 k32 3x3 s1 p0", "direction": "backward_filter",
     "algorithm": "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0", "deterministic": false,
     "math_type": "CUDNN_FMA_MATH", "workspace_bytes": 4096, "chosen_by": "pinned"},
    {"layer": "conv 128x32x26x26 k64 3x3 s1 p0", "direction": "forward",
     "algorithm": "CUDNN_CONVOLUTION_FWD_ALGO_GEMM", "deterministic": true,
     "math_type": "CUDNN_FMA_MATH", "workspace_bytes": 33554432, "chosen_by": "autotuned",
     "autotune": {"math_type": "CUDNN_FMA_MATH", "time_ms": 0.5, "workspace_bytes": 33554432}}])");
  CHECK(to_json(entries) == expected);
  CHECK(to_json({}) == nlohmann::json::array());

  using D = ConvDirection;
  CHECK(cudnn_algorithm_name(D::forward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) ==
        "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM");
  CHECK(cudnn_algorithm_name(D::forward, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED) ==
        "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED");
  CHECK(cudnn_algorithm_name(D::backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) ==
        "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0");
  CHECK(cudnn_algorithm_name(D::backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING) ==
        "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING");
  CHECK(cudnn_algorithm_name(D::backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) ==
        "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3");
  CHECK(cudnn_algorithm_name(D::backward_filter, 42) == "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_42");
  // Every value of every enum has a distinct name.
  for (D d : {D::forward, D::backward_data, D::backward_filter}) {
    const int count = d == D::forward         ? int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
                      : d == D::backward_data ? int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT)
                                              : int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    for (int a = 0; a < count; ++a)
      for (int b = a + 1; b < count; ++b)
        CHECK(cudnn_algorithm_name(d, a) != cudnn_algorithm_name(d, b));
  }
  CHECK(cudnn_math_type_name(CUDNN_FMA_MATH) == "CUDNN_FMA_MATH");
  CHECK(cudnn_math_type_name(CUDNN_DEFAULT_MATH) == "CUDNN_DEFAULT_MATH");
  CHECK(cublas_math_name(CUBLAS_DEFAULT_MATH) == "CUBLAS_DEFAULT_MATH");
  CHECK(cublas_math_name(CUBLAS_PEDANTIC_MATH) == "CUBLAS_PEDANTIC_MATH");
  CHECK(to_string(D::backward_data) == std::string("backward_data"));

  CHECK(conv_geometry_key(test::conv(128, 1, 28, 28, 32, 3, 3)) ==
        "conv 128x1x28x28 k32 3x3 s1 p0");
  CHECK(conv_geometry_key(test::conv(2, 3, 10, 11, 6, 2, 5, 1, 2, 1, 2, 0, 2)) ==
        "conv 2x3x10x11 k6 2x5 s1x2 p(t1 l2 b0 r2)");
  CHECK(conv_geometry_key(test::conv(1, 17, 13, 11, 19, 3, 3, 1, 1, 1, 1, 1, 1)) ==
        "conv 1x17x13x11 k19 3x3 s1 p1");
  CHECK(dense_geometry_key({128, 9216, 128}) == "dense 128x9216->128");
}

// The asymmetric-padding split of conv_plan.h, checked on the CPU: the reference convolution on
// the padded copy with cuDNN's symmetric pads must equal the reference convolution with the
// geometry's own pads, in all three directions. The sums are the same products in the same order,
// only with zero products added for padded taps, which cannot change a double sum of nonzero
// terms: so the results are bitwise equal.
TEST_CASE("asymmetric padding: symmetric part to cuDNN, the rest by a padded copy",
          "[cuda][host]") {
  const ConvGeometry cases[] = {
      test::conv(1, 2, 6, 5, 3, 4, 2, 1, 1, 1, 0, 2, 1),      // t1 l0 b2 r1
      test::conv(2, 3, 8, 8, 5, 3, 3, 2, 2, 0, 0, 1, 1),      // "same" stride 2
      test::conv(2, 3, 10, 11, 6, 2, 5, 1, 2, 1, 2, 0, 2),    // top > bottom
      test::conv(1, 17, 13, 11, 19, 3, 3, 1, 1, 1, 1, 1, 1),  // symmetric: no copy
      test::conv(2, 2, 28, 28, 4, 4, 4, 1, 1, 1, 1, 2, 2),    // "same" with an even kernel
  };
  for (const ConvGeometry& g : cases) {
    INFO(conv_geometry_key(g));
    const ConvPadding pad = split_padding(g);
    CHECK(pad.pad_h == std::min(g.pad_top, g.pad_bottom));
    CHECK(pad.pad_w == std::min(g.pad_left, g.pad_right));
    CHECK(pad.extra_top + pad.pad_h == g.pad_top);
    CHECK(pad.extra_bottom + pad.pad_h == g.pad_bottom);
    CHECK(pad.extra_left + pad.pad_w == g.pad_left);
    CHECK(pad.extra_right + pad.pad_w == g.pad_right);
    CHECK((pad.extra_top == 0 || pad.extra_bottom == 0));  // only one side is copied
    CHECK((pad.extra_left == 0 || pad.extra_right == 0));
    CHECK(pad.copies_input() == (g.pad_top != g.pad_bottom || g.pad_left != g.pad_right));
    REQUIRE(cudnn_output_extent(pad.in_h, pad.pad_h, g.r, g.stride_h) == g.p);
    REQUIRE(cudnn_output_extent(pad.in_w, pad.pad_w, g.s, g.stride_w) == g.q);

    // What cuDNN will be given: the padded input and symmetric pads.
    ConvGeometry sym = g;
    sym.h = pad.in_h, sym.w = pad.in_w;
    sym.pad_top = sym.pad_bottom = pad.pad_h;
    sym.pad_left = sym.pad_right = pad.pad_w;
    const std::int64_t planes = std::int64_t(g.n) * g.c;
    const auto x = test::random_values(g.x_size(), 11);
    const auto w = test::random_values(g.w_size(), 12);
    const auto dy = test::random_values(g.y_size(), 13);
    std::vector<float> x_padded(sym.x_size(), 0.0f);  // what copy_into_padded produces
    for (std::int64_t plane = 0; plane < planes; ++plane)
      for (int i = 0; i < g.h; ++i)
        for (int j = 0; j < g.w; ++j)
          x_padded[(plane * sym.h + i + pad.extra_top) * sym.w + j + pad.extra_left] =
              x[(plane * g.h + i) * g.w + j];

    std::vector<float> y(g.y_size()), y_sym(g.y_size());
    reference::conv2d_forward<float>(g, x.data(), w.data(), nullptr, y.data());
    reference::conv2d_forward<float>(sym, x_padded.data(), w.data(), nullptr, y_sym.data());
    CHECK(test::same_bits(y, y_sym));

    std::vector<float> dx(g.x_size()), dx_padded(sym.x_size()), dx_cropped(g.x_size());
    reference::conv2d_backward_data<float>(g, dy.data(), w.data(), dx.data());
    reference::conv2d_backward_data<float>(sym, dy.data(), w.data(), dx_padded.data());
    for (std::int64_t plane = 0; plane < planes; ++plane)  // what copy_from_padded produces
      for (int i = 0; i < g.h; ++i)
        for (int j = 0; j < g.w; ++j)
          dx_cropped[(plane * g.h + i) * g.w + j] =
              dx_padded[(plane * sym.h + i + pad.extra_top) * sym.w + j + pad.extra_left];
    CHECK(test::same_bits(dx, dx_cropped));

    std::vector<float> dw(g.w_size()), dw_sym(g.w_size());
    reference::conv2d_backward_filter<float>(g, x.data(), dy.data(), dw.data());
    reference::conv2d_backward_filter<float>(sym, x_padded.data(), dy.data(), dw_sym.data());
    CHECK(test::same_bits(dw, dw_sym));
  }
}

TEST_CASE("version strings", "[cuda][host]") {
  CHECK(cuda_version_string(13000) == "13.0");
  CHECK(cuda_version_string(12040) == "12.4");
  CHECK(cuda_version_string(11080) == "11.8");
  CHECK(cuda_version_string(0) == "none");
  CHECK(cudnn_version_string(91900) == "9.19.0");
  CHECK(cudnn_version_string(90100) == "9.1.0");
  CHECK(cudnn_version_string(8907) == "8.9.7");
}

TEST_CASE("resources: empty owners own nothing and move cleanly", "[cuda][host]") {
  DeviceBuffer a;
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  DeviceBuffer b(std::move(a));
  CHECK(b.data() == nullptr);
  a = std::move(b);
  CHECK(a.size() == 0);
  a.reserve(0);  // nothing to grow: no CUDA call, works without a GPU
  CHECK(a.data() == nullptr);
  static_assert(!std::is_copy_constructible_v<DeviceBuffer>);
  static_assert(!std::is_copy_constructible_v<Stream>);
  static_assert(!std::is_copy_constructible_v<TensorDescriptor>);
  static_assert(std::is_nothrow_move_constructible_v<Stream>);
  static_assert(std::is_nothrow_move_constructible_v<CudnnHandle>);
  static_assert(std::is_nothrow_destructible_v<ConvolutionDescriptor>);
  static_assert(std::is_nothrow_destructible_v<CublasHandle>);
}

// On a machine without a usable GPU (every CI machine): query_device() reports why and never
// throws, and the backend refuses to start with a RuntimeFailure carrying that reason. With a GPU
// the same test checks the positive side.
TEST_CASE("query_device and make_cuda_ops on this machine", "[cuda][host]") {
  DeviceInfo info;
  REQUIRE_NOTHROW(info = query_device());
  // Library versions are known without a device.
  CHECK(info.runtime_version == cuda_version_string(CUDART_VERSION));
  CHECK(info.cudnn_version.rfind(std::to_string(CUDNN_MAJOR) + ".", 0) == 0);
  CHECK(info.cublas_version != "unknown");
  const nlohmann::json fingerprint = device_fingerprint(info);
  CHECK(fingerprint.at("cuda") == info.runtime_version);
  CHECK(fingerprint.at("cudnn") == info.cudnn_version);
  CHECK(fingerprint.at("cublas") == info.cublas_version);
  CHECK(fingerprint.at("driver") == info.driver_version);
  if (!info.usable) {
    CHECK_FALSE(info.reason.empty());
    CHECK(fingerprint.at("unusable_reason") == info.reason);
    if (info.name.empty()) CHECK(fingerprint.at("gpu").is_null());
    try {
      ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
      FAIL("make_cuda_ops started without a usable GPU");
    } catch (const ra::RuntimeFailure& e) {
      CHECK(contains(e.what(), "no usable GPU"));
      CHECK(contains(e.what(), info.reason));
    }
  } else {
    CHECK(info.reason.empty());
    CHECK(fingerprint.at("gpu") == info.name);
    CHECK(info.compute_capability_major >= 7);
    CHECK(info.memory_bytes > 0);
    const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
    CHECK(ops->name() == "cuda");
    CHECK_FALSE(ops->memory().host_accessible());
  }
}
