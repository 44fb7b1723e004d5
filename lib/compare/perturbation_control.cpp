// The perturbation control (compare/checks.h; docs/statistics.md, "The perturbed group"): in an
// audit with a perturbed group (--seeds all), each perturbed run flipped one bit of one initial
// weight, so the audit must see it part from the reference run. A flip it did not see (a run
// that recorded no flip, or whose initial weights all match the reference's) means the digests
// cannot tell a one-bit change, and "bitwise identical" of the other runs proves nothing: the
// finding is inconclusive (exit 6), as DESIGN.md asks of a verdict of identity.
#include <algorithm>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"

namespace ra::compare {
namespace {

// A perturbed run, as the control sees it.
struct ControlRun {
  int run = 0;
  std::string flipped;         // "bit 0 of dense_1.weight[5]", "" where the run recorded no flip
  bool seen = false;           // its initial weights differ from the reference's
  bool parted_at_end = false;  // its final outcome is not the reference's
};

std::vector<ControlRun> control_runs(const CheckContext& c) {
  const ComparisonResult& r = c.result;
  const auto* instability = facts_of<InstabilityFindings>(c.earlier, "instability");
  const int reference = instability != nullptr ? instability->reference : 0;
  const auto class_of = [&](int run) {
    return r.runs[static_cast<std::size_t>(run)].outcome_class;
  };
  std::vector<ControlRun> runs;
  for (std::size_t i = 0; i < c.traces.size(); ++i) {
    const trace::Trace& t = c.traces[i];
    if (t.header.seed_group != "perturbed") continue;
    ControlRun run{static_cast<int>(i), "", false,
                   class_of(static_cast<int>(i)) != class_of(reference)};
    if (const auto& p = t.header.perturbation) {
      run.flipped = "bit " + std::to_string(p->bit) + " of " + p->tensor + "[" +
                    std::to_string(p->element) + "]";
      run.seen = t.initial_weights != c.traces[static_cast<std::size_t>(reference)].initial_weights;
    }
    runs.push_back(run);
  }
  return runs;
}

}  // namespace

bool perturbation_control_applies(const CheckContext& c) {
  return std::any_of(c.traces.begin(), c.traces.end(),
                     [](const trace::Trace& t) { return t.header.seed_group == "perturbed"; });
}

Finding perturbation_control(const CheckContext& c) {
  const std::vector<ControlRun> runs = control_runs(c);
  const auto unseen =
      std::count_if(runs.begin(), runs.end(), [](const ControlRun& r) { return !r.seen; });
  Finding f;
  f.name = "perturbation control";
  f.outcome = unseen == 0 ? CheckOutcome::passed : CheckOutcome::inconclusive;
  f.summary =
      unseen == 0
          ? "every perturbed run's one-bit flip was seen in its initial weights (" +
                std::to_string(runs.size()) + " run(s)): the audit can tell a one-bit change"
          : std::to_string(unseen) + " of " + std::to_string(runs.size()) +
                " perturbed run(s) showed no flipped bit: the audit did not prove it can see a "
                "one-bit change";
  f.table.columns = {"run", "flipped", "seen at the start", "final outcome"};
  nlohmann::json data = nlohmann::json::array();
  for (const ControlRun& r : runs) {
    f.table.rows.push_back(
        {std::to_string(r.run), r.flipped.empty() ? "(none recorded)" : r.flipped,
         r.seen ? "yes" : "NO", r.parted_at_end ? "differs" : "the reference's"});
    data.push_back({{"run", r.run},
                    {"flipped", r.flipped},
                    {"seen", r.seen},
                    {"parted_at_end", r.parted_at_end}});
    if (r.flipped.empty()) {
      f.details.push_back("run " + std::to_string(r.run) +
                          " recorded no flip: the recorder flips a float32 weight, so a model "
                          "without one cannot be perturbed");
    }
  }
  f.data = {{"runs", data}};
  return f;
}

}  // namespace ra::compare
