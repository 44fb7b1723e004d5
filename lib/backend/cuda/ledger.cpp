#include "backend/cuda/ledger.h"

#include <utility>

namespace ra::backend::cuda {
namespace {

// prefix followed by a number. (Not `"literal" + std::to_string(n)`: GCC 12 reports a false
// -Wrestrict in that operator+ overload.)
std::string numbered(const char* prefix, int number) {
  std::string s(prefix);
  s += std::to_string(number);
  return s;
}

}  // namespace

nlohmann::json to_json(const std::vector<LedgerEntry>& entries) {
  nlohmann::json out = nlohmann::json::array();
  for (const LedgerEntry& e : entries) {
    nlohmann::json entry = {{"layer", e.layer},         {"direction", e.direction},
                            {"algorithm", e.algorithm}, {"deterministic", e.deterministic},
                            {"math_type", e.math_type}, {"workspace_bytes", e.workspace_bytes},
                            {"chosen_by", e.chosen_by}};
    if (e.autotune) {
      entry["autotune"] = {{"math_type", e.autotune->math_type},
                           {"time_ms", e.autotune->time_ms},
                           {"workspace_bytes", e.autotune->workspace_bytes}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string cudnn_algorithm_name(ConvDirection direction, int algorithm) {
  switch (direction) {
    case ConvDirection::forward:
      switch (algorithm) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
          return "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
          return "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
          return "CUDNN_CONVOLUTION_FWD_ALGO_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
          return "CUDNN_CONVOLUTION_FWD_ALGO_DIRECT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
          return "CUDNN_CONVOLUTION_FWD_ALGO_FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
          return "CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
          return "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
          return "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED";
        default:
          return numbered("CUDNN_CONVOLUTION_FWD_ALGO_", algorithm);
      }
    case ConvDirection::backward_data:
      switch (algorithm) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
          return "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED";
        default:
          return numbered("CUDNN_CONVOLUTION_BWD_DATA_ALGO_", algorithm);
      }
    case ConvDirection::backward_filter:
      switch (algorithm) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
          return "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING";
        default:
          return numbered("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_", algorithm);
      }
  }
  return numbered("unknown algorithm ", algorithm);
}

std::optional<int> cudnn_algorithm_from_name(ConvDirection direction, const std::string& name) {
  // Every value the direction's enum has (its _COUNT), then any numbered name: the names are
  // made by cudnn_algorithm_name, so the two can never disagree.
  int count = 0;
  switch (direction) {
    case ConvDirection::forward:
      count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
      break;
    case ConvDirection::backward_data:
      count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
      break;
    case ConvDirection::backward_filter:
      count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
      break;
  }
  for (int a = 0; a < count; ++a) {
    if (cudnn_algorithm_name(direction, a) == name) return a;
  }
  return std::nullopt;
}

std::string cudnn_math_type_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "CUDNN_DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH:
      return "CUDNN_TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH:
      return "CUDNN_FMA_MATH";
  }
  return numbered("CUDNN_MATH_", static_cast<int>(math));
}

std::string cublas_math_name(cublasMath_t math) {
  switch (math) {
    case CUBLAS_DEFAULT_MATH:
      return "CUBLAS_DEFAULT_MATH";
    case CUBLAS_PEDANTIC_MATH:
      return "CUBLAS_PEDANTIC_MATH";
    case CUBLAS_TF32_TENSOR_OP_MATH:
      return "CUBLAS_TF32_TENSOR_OP_MATH";
    default:
      break;  // flags and deprecated values
  }
  return numbered("CUBLAS_MATH_", static_cast<int>(math));
}

}  // namespace ra::backend::cuda
