// The names a pin file holds, turned back into cuDNN enum values (backend/cuda/ledger.h). Host
// logic: runs on every machine that builds the CUDA backend, GPU or not.
#include <catch2/catch.hpp>

#include "backend/algorithm_pins.h"
#include "backend/cuda/ledger.h"

using ra::backend::cuda::ConvDirection;

TEST_CASE("cuDNN algorithm names round-trip to their enum values", "[cuda][pins]") {
  const std::pair<ConvDirection, int> directions[] = {
      {ConvDirection::forward, CUDNN_CONVOLUTION_FWD_ALGO_COUNT},
      {ConvDirection::backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT},
      {ConvDirection::backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT}};
  for (const auto& [direction, count] : directions) {
    for (int a = 0; a < count; ++a) {
      const std::string name = ra::backend::cuda::cudnn_algorithm_name(direction, a);
      INFO(name);
      CHECK(ra::backend::cuda::cudnn_algorithm_from_name(direction, name) == a);
    }
  }
  CHECK(ra::backend::cuda::cudnn_algorithm_from_name(ConvDirection::backward_filter,
                                                     "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT") ==
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT);
  // Another direction's name, a cuBLAS or custom kernel, an unknown name: none.
  CHECK_FALSE(ra::backend::cuda::cudnn_algorithm_from_name(ConvDirection::backward_data,
                                                           "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1"));
  CHECK_FALSE(ra::backend::cuda::cudnn_algorithm_from_name(ConvDirection::forward, "cublasSgemm"));
  CHECK_FALSE(ra::backend::cuda::cudnn_algorithm_from_name(ConvDirection::forward, ""));
}

TEST_CASE("algorithm pins find a geometry and direction", "[cuda][pins]") {
  ra::backend::AlgorithmPins pins;
  pins.pins = {
      {"conv 2x1x8x8 k3 3x3 s1 p0", "forward", "CUDNN_CONVOLUTION_FWD_ALGO_GEMM"},
      {"conv 2x1x8x8 k3 3x3 s1 p0", "backward_filter", "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1"}};
  REQUIRE(pins.find("conv 2x1x8x8 k3 3x3 s1 p0", "backward_filter") != nullptr);
  CHECK(pins.find("conv 2x1x8x8 k3 3x3 s1 p0", "backward_filter")->algorithm ==
        "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1");
  CHECK(pins.find("conv 2x1x8x8 k3 3x3 s1 p0", "backward_data") == nullptr);
  CHECK(pins.find("conv 4x1x8x8 k3 3x3 s1 p0", "forward") == nullptr);
}
