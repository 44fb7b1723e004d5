#include "backend/cuda/conv_autotune.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ledger.h"

namespace ra::backend::cuda {

bool autotune_accepts(const ConvPerfResult& result, AutotuneCandidates candidates) {
  if (candidates == AutotuneCandidates::deterministic_only && !result.deterministic) return false;
  return result.status == CUDNN_STATUS_SUCCESS && result.math == CUDNN_FMA_MATH;
}

std::optional<ConvPerfResult> pick_autotuned(const std::vector<ConvPerfResult>& results,
                                             AutotuneCandidates candidates) {
  std::optional<ConvPerfResult> best;
  for (const ConvPerfResult& r : results) {
    if (!autotune_accepts(r, candidates)) continue;
    if (!best || r.time_ms < best->time_ms) best = r;
  }
  return best;
}

std::string autotune_rejections(const std::string& call, ConvDirection direction,
                                const std::vector<ConvPerfResult>& results,
                                AutotuneCandidates candidates) {
  const bool deterministic_only = candidates == AutotuneCandidates::deterministic_only;
  std::string text = call + " returned " + std::to_string(results.size()) + " result" +
                     (results.size() == 1 ? "" : "s") + ", none " +
                     (deterministic_only ? "deterministic " : "") + "fp32 FMA with status success";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ConvPerfResult& r = results[i];
    text += i == 0 ? ": " : ", ";
    text += cudnn_algorithm_name(direction, r.algorithm) + " (";
    if (r.status != CUDNN_STATUS_SUCCESS) {
      text += cudnn_status_name(r.status);
    } else if (r.math != CUDNN_FMA_MATH || !deterministic_only || r.deterministic) {
      text += cudnn_math_type_name(r.math);
    } else {
      text += "nondeterministic";
    }
    text += ")";
  }
  return text;
}

}  // namespace ra::backend::cuda
