// The instability of a perturbed group as a registered check (compare/checks.h; --seeds all,
// docs/statistics.md): the three groups' spreads per metric, their ratios and what they mean
// (compare/instability.h), with each run's predictions loaded through
// ComparisonOptions::load_predictions. A measurement, not a verdict: it passes, and decides no
// exit code. Its forms are the report's instability section (report/instability_section.cpp);
// its facts the InstabilityFindings, which the perturbation control reads for the reference run.
#include <algorithm>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool instability_applies(const CheckContext& c) {
  return std::any_of(c.traces.begin(), c.traces.end(),
                     [](const trace::Trace& t) { return t.header.seed_group == "perturbed"; });
}

Finding instability_finding(const CheckContext& c) {
  std::vector<std::optional<std::vector<std::int64_t>>> predictions(c.traces.size());
  for (std::size_t i = 0; i < c.traces.size(); ++i) {
    if (c.options.load_predictions)
      predictions[i] = c.options.load_predictions(static_cast<int>(i));
  }
  Finding f;
  f.name = "instability";
  f.own_section = true;
  f.outcome = CheckOutcome::passed;
  if (std::optional<InstabilityFindings> found = instability_findings(c.traces, predictions))
    f.facts = std::move(*found);
  return f;
}

const InstabilityFindings* instability_of(const ComparisonResult& r) {
  return facts_of<InstabilityFindings>(r.findings, "instability");
}

}  // namespace ra::compare
