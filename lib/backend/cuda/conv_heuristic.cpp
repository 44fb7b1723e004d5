#include "backend/cuda/conv_heuristic.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ledger.h"

namespace ra::backend::cuda {
namespace {

// The first condition a result fails, as the error names it; "" when it is accepted.
std::string refusal(const ConvPerfResult& r, std::size_t workspace_limit) {
  if (r.status != CUDNN_STATUS_SUCCESS) return cudnn_status_name(r.status);
  if (!r.deterministic) return "nondeterministic";
  if (r.math != CUDNN_FMA_MATH) return cudnn_math_type_name(r.math);
  if (r.memory > workspace_limit) return "workspace " + std::to_string(r.memory) + " bytes";
  return "";
}

}  // namespace

bool heuristic_accepts(const ConvPerfResult& result, std::size_t workspace_limit) {
  return refusal(result, workspace_limit).empty();
}

std::optional<ConvPerfResult> pick_heuristic(const std::vector<ConvPerfResult>& ranked,
                                             std::size_t workspace_limit) {
  for (const ConvPerfResult& r : ranked) {
    if (heuristic_accepts(r, workspace_limit)) return r;
  }
  return std::nullopt;
}

std::string heuristic_rejections(const std::string& call, ConvDirection direction,
                                 const std::vector<ConvPerfResult>& ranked,
                                 std::size_t workspace_limit) {
  std::string text = call + " ranked " + std::to_string(ranked.size()) + " result" +
                     (ranked.size() == 1 ? "" : "s") +
                     ", none deterministic fp32 FMA with status success within " +
                     std::to_string(workspace_limit) + " bytes of workspace";
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    text += i == 0 ? ": " : ", ";
    text += cudnn_algorithm_name(direction, ranked[i].algorithm) + " (" +
            refusal(ranked[i], workspace_limit) + ")";
  }
  return text;
}

}  // namespace ra::backend::cuda
