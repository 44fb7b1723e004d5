// The steps' launches as a registered check (compare/checks.h): with --cuda-graphs on, each run's
// end record says how many of its steps replayed a CUDA graph, were captured into one, or ran
// eagerly and why (docs/report.md, "Cost"). Evidence of cost, never a verdict: it passes, and
// applies where some run asked for graphs. Its forms are the report's step-launches section
// (report/step_launches_section.cpp).
#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool step_launches_applies(const CheckContext& c) {
  for (const trace::Trace& t : c.traces) {
    if (t.final && t.final->step_launch) return true;
  }
  return false;
}

Finding step_launches_finding(const CheckContext& c) {
  StepLaunches launches;
  for (const trace::Trace& t : c.traces) {
    launches.runs.push_back(t.final ? t.final->step_launch : std::nullopt);
    if (launches.runs.back()) launches.sum += *launches.runs.back();
  }
  Finding f;
  f.name = "step launches";
  f.own_section = true;
  f.outcome = CheckOutcome::passed;
  f.facts = std::move(launches);
  return f;
}

const StepLaunches* step_launches_of(const ComparisonResult& r) {
  return facts_of<StepLaunches>(r.findings, "step_launches");
}

}  // namespace ra::compare
