// Phase of the comparison: outcome statistics per seed group, and with both groups the ratio of
// same-seed to different-seed spread (how much of the run-to-run variation nondeterminism alone
// explains) (compare_phases.h).
#include <map>

#include "compare/compare_phases.h"

namespace ra::compare::phases {

SeedGroupStatistics seed_group_statistics(const std::vector<RunSummary>& runs) {
  SeedGroupStatistics out;
  std::map<std::string, std::vector<const RunSummary*>> groups;  // by name: a stable order
  for (const RunSummary& r : runs)
    groups[r.seed_group.empty() ? "same" : r.seed_group].push_back(&r);
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> loss_and_accuracy;
  for (const auto& [name, members] : groups) {
    std::vector<double> loss, accuracy, step_ms;
    for (const RunSummary* r : members) {
      loss.push_back(r->final_loss);
      if (r->eval_accuracy) accuracy.push_back(*r->eval_accuracy);
      step_ms.push_back(r->median_step_seconds * 1e3);
    }
    out.groups.push_back({name, summarize(loss), summarize(accuracy), summarize(step_ms)});
    loss_and_accuracy[name] = {loss, accuracy};
  }
  if (loss_and_accuracy.count("same") && loss_and_accuracy.count("different")) {
    const auto& same = loss_and_accuracy["same"];
    const auto& different = loss_and_accuracy["different"];
    out.loss_std_ratio = std_ratio(same.first, different.first);
    if (!same.second.empty() && !different.second.empty()) {
      out.accuracy_std_ratio = std_ratio(same.second, different.second);
    }
  }
  return out;
}

}  // namespace ra::compare::phases
