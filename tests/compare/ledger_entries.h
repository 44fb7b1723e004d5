#pragma once
// A ledger entry of an autotuned cuDNN convolution, as the engine's ledger writes one: the tests
// of compare's algorithm checks and of root cause build their ledgers from it.
#include <nlohmann/json.hpp>

#include <string>

inline nlohmann::json autotuned(const std::string& layer, const std::string& direction,
                                const std::string& algorithm, double ms,
                                bool deterministic = true) {
  return {{"layer", layer},
          {"direction", direction},
          {"algorithm", algorithm},
          {"deterministic", deterministic},
          {"math_type", "CUDNN_FMA_MATH"},
          {"workspace_bytes", 0},
          {"chosen_by", "autotuned"},
          {"autotune", {{"math_type", "CUDNN_FMA_MATH"}, {"time_ms", ms}, {"workspace_bytes", 0}}}};
}
