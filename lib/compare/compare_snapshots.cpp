// Phase of the comparison: divergence measured from weight snapshots (safetensors) of the same
// point in the compared runs: elements differing, sign flips, max abs, max relative and max ulp
// per tensor, worst over the runs against the reference (compare_phases.h).
#include "compare/compare_phases.h"
#include "core/error.h"

namespace ra::compare::phases {
namespace {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Folds run `run`'s snapshot into the worst difference per tensor (InputError when its tensors
// are not the reference's).
void add_run(SnapshotDivergence& out, const NamedTensors& ref, const NamedTensors& other, int run,
             int ref_run) {
  const std::string& point = out.point;
  if (other.size() != ref.size())
    throw InputError("snapshot " + point + " of run " + std::to_string(run) +
                     " has other tensors than run " + std::to_string(ref_run));
  for (std::size_t k = 0; k < ref.size(); ++k) {
    if (other[k].first != ref[k].first || other[k].second.shape() != ref[k].second.shape()) {
      throw InputError("snapshot " + point + " of run " + std::to_string(run) + ": tensor " +
                       other[k].first + " does not match run " + std::to_string(ref_run));
    }
    TensorDifference& worst = out.tensors[k].difference;
    worst = widest(worst, compare_tensors(ref[k].second, other[k].second));
  }
}

}  // namespace

std::optional<SnapshotDivergence> snapshot_divergence(const ComparisonOptions& options,
                                                      const std::vector<int>& ids,
                                                      const std::string& point,
                                                      std::optional<std::int64_t> step) {
  if (!options.load_snapshot || ids.size() < 2) return std::nullopt;
  NamedTensors ref;
  if (!options.load_snapshot(ids[0], point, ref)) return std::nullopt;
  SnapshotDivergence out;
  out.point = point;
  out.step = step;
  for (const auto& [name, tensor] : ref) out.tensors.push_back({name, {}});
  bool any = false;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    NamedTensors other;
    if (!options.load_snapshot(ids[i], point, other)) continue;
    add_run(out, ref, other, ids[i], ids[0]);
    any = true;
  }
  if (!any) return std::nullopt;
  for (const auto& t : out.tensors) out.total = combined(out.total, t.difference);
  return out;
}

std::vector<SnapshotDivergence> snapshot_divergences(const ComparisonOptions& options,
                                                     const ComparedRuns& compared,
                                                     const std::optional<Divergence>& first) {
  std::vector<SnapshotDivergence> out;
  if (auto snap = snapshot_divergence(options, compared.ids, "initial", std::nullopt)) {
    out.push_back(std::move(*snap));
  }
  // At the first divergence, when a snapshot was taken after that step.
  if (first && first->step) {
    const std::int64_t s = *first->step;
    if (auto snap = snapshot_divergence(options, compared.ids, "step-" + std::to_string(s), s)) {
      out.push_back(std::move(*snap));
    }
  }
  if (auto snap = snapshot_divergence(options, compared.ids, "final", compared.common_steps - 1)) {
    out.push_back(std::move(*snap));
  }
  return out;
}

}  // namespace ra::compare::phases
