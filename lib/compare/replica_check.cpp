// Replicas that agree within a data-parallel run: compare/replica_check.h.
#include "compare/replica_check.h"

#include <algorithm>

namespace ra::compare {
namespace {

// The first parameter whose digest differs, "" for one digest over all weights (a step of a
// version 4 trace that kept one per category); none when they agree.
std::optional<std::string> first_difference(const trace::TraceHeader& h,
                                            const trace::StepRecord& reference,
                                            const trace::StepRecord& other) {
  if (!reference.per_tensor || !other.per_tensor) {
    if (reference.weights_digest == other.weights_digest) return std::nullopt;
    return std::string();
  }
  const std::size_t n = std::min(reference.weights.size(), other.weights.size());
  for (std::size_t p = 0; p < n; ++p) {
    if (reference.weights[p] != other.weights[p]) return h.params.at(p).name;
  }
  return std::nullopt;
}

std::optional<std::string> first_initial_difference(const trace::Trace& reference,
                                                    const trace::Trace& other) {
  const std::size_t n = std::min(reference.initial_weights.size(), other.initial_weights.size());
  for (std::size_t p = 0; p < n; ++p) {
    if (reference.initial_weights[p] != other.initial_weights[p])
      return reference.header.params.at(p).name;
  }
  return std::nullopt;
}

bool same_steps(const std::vector<trace::Trace>& ranks, std::size_t s, auto&& field) {
  return std::all_of(ranks.begin(), ranks.end(), [&](const trace::Trace& t) {
    return s < t.steps.size() && field(t.steps[s]) == field(ranks[0].steps[s]);
  });
}

}  // namespace

std::optional<ReplicaDivergence> replica_divergence(const std::vector<trace::Trace>& ranks,
                                                    int run) {
  if (ranks.size() < 2) return std::nullopt;
  const trace::Trace& reference = ranks[0];
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    if (auto name = first_initial_difference(reference, ranks[r])) {
      return ReplicaDivergence{run, -1, *name, static_cast<int>(r)};
    }
  }
  // Step by step across ranks, so that the earliest step is named whichever rank parts.
  for (std::size_t s = 0; s < reference.steps.size(); ++s) {
    for (std::size_t r = 1; r < ranks.size(); ++r) {
      if (s >= ranks[r].steps.size()) continue;
      if (auto name = first_difference(reference.header, reference.steps[s], ranks[r].steps[s])) {
        return ReplicaDivergence{run, reference.steps[s].step, *name, static_cast<int>(r)};
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> expected_rank_differences(const std::vector<trace::Trace>& ranks) {
  std::vector<std::string> out;
  if (ranks.size() < 2) return out;
  const std::size_t steps = ranks[0].steps.size();
  for (std::size_t s = 0; s < steps; ++s) {
    if (!same_steps(ranks, s, [](const trace::StepRecord& r) { return r.batch_inputs; })) {
      out.push_back(
          "batches differ between ranks (each rank trains its share of the global "
          "batch), and so do their losses and local gradients: not compared across "
          "ranks");
      break;
    }
  }
  for (std::size_t s = 0; s < steps; ++s) {
    if (!same_steps(ranks, s, [](const trace::StepRecord& r) { return r.buffers; })) {
      // Whatever broadcast_buffers is (not recorded): each rank's forward updates BatchNorm's
      // running statistics from its own batch after DDP copied rank 0's in (the default, True).
      out.push_back("buffers differ between ranks from step " +
                    std::to_string(ranks[0].steps[s].step) +
                    " (each rank's forward updates BatchNorm's running statistics from its own "
                    "batch; DDP's default broadcast_buffers=True copies rank 0's back in at the "
                    "next forward): expected, not a desynchronisation");
      break;
    }
  }
  return out;
}

std::string describe(const ReplicaDivergence& d) {
  const std::string where =
      d.step < 0 ? "before step 0 (the initial weights)" : "at step " + std::to_string(d.step);
  const std::string what = d.tensor.empty() ? "weights (one digest per step here)" : d.tensor;
  return "replicas desynchronised " + where + " of run " + std::to_string(d.run) + ": rank " +
         std::to_string(d.rank) + "'s " + what + " differs from rank 0's";
}

}  // namespace ra::compare
