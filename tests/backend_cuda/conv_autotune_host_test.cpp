// The autotune filter (backend/cuda/conv_autotune.h) on hand-built cudnnFind results: only fp32
// FMA results with status success are accepted, the fastest of those wins whatever the order, and
// when none is left the error names every result and why it was refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend/cuda/conv_autotune.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::test::contains;

ConvPerfResult result(int algorithm, float time_ms, cudnnMathType_t math,
                      cudnnStatus_t status = CUDNN_STATUS_SUCCESS, std::size_t memory = 0) {
  ConvPerfResult r;
  r.algorithm = algorithm;
  r.time_ms = time_ms;
  r.math = math;
  r.status = status;
  r.memory = memory;
  return r;
}

}  // namespace

TEST_CASE("autotune accepts only fp32 FMA results that succeeded", "[cuda][host]") {
  CHECK(autotune_accepts(result(0, 1.0f, CUDNN_FMA_MATH)));
  // DEFAULT_MATH permits TF32 tensor cores on sm_80+: refused like the tensor-op types.
  CHECK_FALSE(autotune_accepts(result(0, 1.0f, CUDNN_DEFAULT_MATH)));
  CHECK_FALSE(autotune_accepts(result(0, 1.0f, CUDNN_TENSOR_OP_MATH)));
  CHECK_FALSE(autotune_accepts(result(0, 1.0f, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)));
  CHECK_FALSE(autotune_accepts(result(0, 1.0f, CUDNN_FMA_MATH, CUDNN_STATUS_NOT_SUPPORTED)));
  CHECK_FALSE(autotune_accepts(result(0, 1.0f, CUDNN_FMA_MATH, CUDNN_STATUS_ALLOC_FAILED)));
}

TEST_CASE("pick_autotuned takes the fastest accepted result", "[cuda][host]") {
  // Faster results that would run another math type, or failed, are passed over.
  const std::vector<ConvPerfResult> results = {
      result(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, 0.1f, CUDNN_TENSOR_OP_MATH),
      result(CUDNN_CONVOLUTION_FWD_ALGO_FFT, 0.2f, CUDNN_DEFAULT_MATH),
      result(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, 0.0f, CUDNN_FMA_MATH, CUDNN_STATUS_NOT_SUPPORTED),
      result(CUDNN_CONVOLUTION_FWD_ALGO_GEMM, 0.9f, CUDNN_FMA_MATH, CUDNN_STATUS_SUCCESS, 64),
      result(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 0.7f, CUDNN_FMA_MATH, CUDNN_STATUS_SUCCESS,
             128),
      result(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 0.7f, CUDNN_FMA_MATH),
  };
  const auto best = pick_autotuned(results);
  REQUIRE(best.has_value());
  // 0.7 twice: the first in cudnnFind's order.
  CHECK(best->algorithm == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(best->memory == 128);
  CHECK(best->math == CUDNN_FMA_MATH);
  CHECK(best->time_ms == 0.7f);
  CHECK_FALSE(pick_autotuned({}).has_value());
}

TEST_CASE("perf structs of every direction convert field by field", "[cuda][host]") {
  cudnnConvolutionBwdFilterAlgoPerf_t perf{};
  perf.algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  perf.status = CUDNN_STATUS_SUCCESS;
  perf.time = 1.25f;
  perf.memory = 4096;
  perf.determinism = CUDNN_NON_DETERMINISTIC;
  perf.mathType = CUDNN_FMA_MATH;
  const ConvPerfResult r = conv_perf_result(perf);
  CHECK(r.algorithm == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
  CHECK(r.time_ms == 1.25f);
  CHECK(r.memory == 4096);
  CHECK_FALSE(r.deterministic);
  CHECK(r.math == CUDNN_FMA_MATH);
  cudnnConvolutionBwdDataAlgoPerf_t data{};
  data.algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  data.determinism = CUDNN_DETERMINISTIC;
  data.mathType = CUDNN_TENSOR_OP_MATH;
  CHECK(conv_perf_result(data).deterministic);
  CHECK(conv_perf_result(data).math == CUDNN_TENSOR_OP_MATH);
}

TEST_CASE("no accepted result: the error names every result and why", "[cuda][host]") {
  const std::vector<ConvPerfResult> results = {
      result(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, 0.1f, CUDNN_TENSOR_OP_MATH),
      result(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, 0.2f, CUDNN_FMA_MATH, CUDNN_STATUS_NOT_SUPPORTED),
  };
  REQUIRE_FALSE(pick_autotuned(results).has_value());
  const std::string text = autotune_rejections("cudnnFindConvolutionBackwardDataAlgorithm",
                                               ConvDirection::backward_data, results);
  CHECK(contains(text, "cudnnFindConvolutionBackwardDataAlgorithm returned 2 results"));
  CHECK(contains(text, "none fp32 FMA"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 (CUDNN_TENSOR_OP_MATH)"));
  CHECK(contains(text, "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 (CUDNN_STATUS_NOT_SUPPORTED)"));
  CHECK(contains(autotune_rejections("f", ConvDirection::forward, {}), "returned 0 results"));
}

TEST_CASE("deterministic autotune takes the fastest deterministic result", "[cuda][host]") {
  // A fake cudnnFind list for a filter gradient: the atomic ALGO_0 is fastest, then a TF32 result,
  // then the deterministic FFT and ALGO_1.
  auto deterministic = [](ConvPerfResult r) {
    r.deterministic = true;
    return r;
  };
  const std::vector<ConvPerfResult> results = {
      result(0, 0.066f, CUDNN_FMA_MATH),
      deterministic(result(5, 0.050f, CUDNN_TENSOR_OP_MATH)),
      deterministic(result(4, 0.087f, CUDNN_FMA_MATH)),
      deterministic(result(1, 0.120f, CUDNN_FMA_MATH)),
  };
  REQUIRE(pick_autotuned(results)->algorithm == 0);  // autotune mode: atomics allowed
  const auto chosen = pick_autotuned(results, AutotuneCandidates::deterministic_only);
  REQUIRE(chosen);
  CHECK(chosen->algorithm == 4);
  CHECK(chosen->deterministic);
  CHECK_FALSE(autotune_accepts(results[0], AutotuneCandidates::deterministic_only));
  CHECK(autotune_accepts(results[0], AutotuneCandidates::any));

  // Only nondeterministic results: nothing to run, and the error says why for each.
  const std::vector<ConvPerfResult> atomic_only = {result(0, 0.066f, CUDNN_FMA_MATH),
                                                   result(3, 0.070f, CUDNN_FMA_MATH)};
  CHECK_FALSE(pick_autotuned(atomic_only, AutotuneCandidates::deterministic_only));
  const std::string why = autotune_rejections("cudnnFindConvolutionBackwardFilterAlgorithmEx",
                                              ConvDirection::backward_filter, atomic_only,
                                              AutotuneCandidates::deterministic_only);
  CHECK(contains(why, "none deterministic fp32 FMA with status success"));
  CHECK(contains(why, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 (nondeterministic)"));
  CHECK(contains(why, "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 (nondeterministic)"));
}
