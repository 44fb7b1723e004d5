#include "backend/cuda/conv_autotune.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ledger.h"

namespace ra::backend::cuda {

bool autotune_accepts(const ConvPerfResult& result) {
  return result.status == CUDNN_STATUS_SUCCESS && result.math == CUDNN_FMA_MATH;
}

std::optional<ConvPerfResult> pick_autotuned(const std::vector<ConvPerfResult>& results) {
  std::optional<ConvPerfResult> best;
  for (const ConvPerfResult& r : results) {
    if (!autotune_accepts(r)) continue;
    if (!best || r.time_ms < best->time_ms) best = r;
  }
  return best;
}

std::string autotune_rejections(const std::string& call, ConvDirection direction,
                                const std::vector<ConvPerfResult>& results) {
  std::string text = call + " returned " + std::to_string(results.size()) + " result" +
                     (results.size() == 1 ? "" : "s") + ", none fp32 FMA with status success";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ConvPerfResult& r = results[i];
    text += i == 0 ? ": " : ", ";
    text += cudnn_algorithm_name(direction, r.algorithm) + " (";
    text += r.status != CUDNN_STATUS_SUCCESS ? cudnn_status_name(r.status)
                                             : cudnn_math_type_name(r.math);
    text += ")";
  }
  return text;
}

}  // namespace ra::backend::cuda
