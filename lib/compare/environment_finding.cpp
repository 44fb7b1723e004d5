// Where the runs' environments and algorithm ledgers differ, as a registered check
// (compare/checks.h): the fingerprint keys that differ between traces
// (compare_environment.cpp) and each geometry and direction whose algorithm differs
// (compare_algorithms.cpp). Evidence beside the verdict, never one: it passes, and applies to
// every comparison (the JSON report always has both lists). Its forms are the report's
// environment section (report/environment_section.cpp).
#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/compare_phases.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool environment_applies(const CheckContext&) {
  return true;
}

Finding environment_finding(const CheckContext& c) {
  std::vector<const nlohmann::json*> ledgers;
  for (const trace::Trace& t : c.traces) ledgers.push_back(&t.header.ledger);
  Finding f;
  f.name = "environment";
  f.own_section = true;
  f.outcome = CheckOutcome::passed;
  f.facts = EnvironmentFindings{phases::environment_differences(c.traces),
                                phases::ledger_differences(ledgers)};
  return f;
}

const EnvironmentFindings& environment_of(const ComparisonResult& r) {
  static const EnvironmentFindings none;
  const auto* found = facts_of<EnvironmentFindings>(r.findings, "environment");
  return found == nullptr ? none : *found;
}

}  // namespace ra::compare
