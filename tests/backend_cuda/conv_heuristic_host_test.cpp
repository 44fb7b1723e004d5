// Deterministic mode's rule (backend/cuda/conv_heuristic.h) on hand-built heuristic rankings:
// the first result in cuDNN's order that succeeded, is deterministic, was ranked under fp32 FMA
// math and fits the workspace limit wins, whatever comes after it; when none qualifies the error
// names every result and the condition it failed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/cuda/conv_heuristic.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::test::contains;

ConvPerfResult ranked(int algorithm, bool deterministic, cudnnMathType_t math = CUDNN_FMA_MATH,
                      std::size_t memory = 0, cudnnStatus_t status = CUDNN_STATUS_SUCCESS) {
  ConvPerfResult r;
  r.algorithm = algorithm;
  r.deterministic = deterministic;
  r.math = math;
  r.memory = memory;
  r.status = status;
  r.time_ms = -1.0f;  // the heuristics time nothing
  return r;
}

constexpr std::size_t kMiB = std::size_t(1) << 20;

}  // namespace

TEST_CASE("the heuristic rule accepts deterministic fp32 FMA results within the limit",
          "[cuda][host]") {
  const std::size_t limit = 64 * kMiB;
  CHECK(heuristic_accepts(ranked(1, true), limit));
  CHECK(heuristic_accepts(ranked(1, true, CUDNN_FMA_MATH, limit), limit));  // exactly the limit
  CHECK_FALSE(heuristic_accepts(ranked(1, true, CUDNN_FMA_MATH, limit + 1), limit));
  CHECK_FALSE(heuristic_accepts(ranked(0, false), limit));
  // DEFAULT_MATH permits TF32 on sm_80+: refused like the tensor-op types.
  CHECK_FALSE(heuristic_accepts(ranked(1, true, CUDNN_DEFAULT_MATH), limit));
  CHECK_FALSE(heuristic_accepts(ranked(1, true, CUDNN_TENSOR_OP_MATH), limit));
  CHECK_FALSE(heuristic_accepts(ranked(1, true, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), limit));
  CHECK_FALSE(
      heuristic_accepts(ranked(1, true, CUDNN_FMA_MATH, 0, CUDNN_STATUS_NOT_SUPPORTED), limit));
}

TEST_CASE("the heuristic rule takes the first acceptable result in cuDNN's order", "[cuda][host]") {
  // The H100 filter-gradient ranking of issue 33, in spirit: an atomic algorithm ranked first,
  // then FFT (deterministic), then ALGO_1. FFT wins: the rank decides, not the enum value.
  const std::vector<ConvPerfResult> filter = {
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, false),
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, true, CUDNN_FMA_MATH, 12 * kMiB),
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true),
  };
  const auto first = pick_heuristic(filter, kHeuristicWorkspaceLimit);
  REQUIRE(first.has_value());
  CHECK(first->algorithm == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT);
  CHECK(first->memory == 12 * kMiB);

  // The same ranking with a limit below FFT's workspace: the next acceptable one.
  const auto small = pick_heuristic(filter, 8 * kMiB);
  REQUIRE(small.has_value());
  CHECK(small->algorithm == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);

  // Tensor-op and failed results before an acceptable one are passed over.
  const std::vector<ConvPerfResult> data = {
      ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, true, CUDNN_TENSOR_OP_MATH),
      ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, true, CUDNN_FMA_MATH, 0,
             CUDNN_STATUS_NOT_SUPPORTED),
      ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, true),
      ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, true),
  };
  const auto data_first = pick_heuristic(data, kHeuristicWorkspaceLimit);
  REQUIRE(data_first.has_value());
  CHECK(data_first->algorithm == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING);

  // A pure function: the same ranking gives the same choice every time.
  for (int i = 0; i < 3; ++i) {
    CHECK(pick_heuristic(filter, kHeuristicWorkspaceLimit)->algorithm ==
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT);
  }
  CHECK_FALSE(pick_heuristic({}, kHeuristicWorkspaceLimit).has_value());
}

TEST_CASE("without an acceptable result the error names every one and why", "[cuda][host]") {
  const std::vector<ConvPerfResult> none = {
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, false),
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, true, CUDNN_FMA_MATH, 300 * kMiB),
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true, CUDNN_DEFAULT_MATH),
      ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, false, CUDNN_FMA_MATH, 0,
             CUDNN_STATUS_NOT_SUPPORTED),
  };
  REQUIRE_FALSE(pick_heuristic(none, kHeuristicWorkspaceLimit).has_value());
  const std::string text =
      heuristic_rejections("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                           ConvDirection::backward_filter, none, kHeuristicWorkspaceLimit);
  INFO(text);
  CHECK(contains(text, "cudnnGetConvolutionBackwardFilterAlgorithm_v7 ranked 4 results"));
  CHECK(contains(text, "within 268435456 bytes"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 (nondeterministic)"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT (workspace 314572800 bytes)"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 (CUDNN_DEFAULT_MATH)"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 (CUDNN_STATUS_NOT_SUPPORTED)"));
}
