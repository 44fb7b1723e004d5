// A PyTorch loader's workers as a registered check (compare/checks.h): the random streams the
// workers of one pass start from alike (compare_loader_workers.cpp, docs/pytorch.md "Loader
// workers"). A finding within runs, not a difference between them: it passes, or is allowed where
// a stream is shared, and never decides the exit code. Its forms are the report's loader-workers
// section (report/loader_workers_section.cpp); its facts the LoaderWorkerFindings, which the next
// step's loader advice reads too.
#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/compare_phases.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool loader_workers_applies(const CheckContext& c) {
  for (const trace::Trace& t : c.traces) {
    if (t.final && !t.final->loader_workers.empty()) return true;
  }
  return false;
}

Finding loader_workers_finding(const CheckContext& c) {
  Finding f;
  f.name = "loader workers";
  f.own_section = true;
  std::optional<LoaderWorkerFindings> found = phases::loader_worker_findings(c.traces);
  f.outcome =
      found && !found->shared_streams.empty() ? CheckOutcome::allowed : CheckOutcome::passed;
  if (found) f.facts = std::move(*found);
  return f;
}

const LoaderWorkerFindings* loader_workers_of(const ComparisonResult& r) {
  return facts_of<LoaderWorkerFindings>(r.findings, "loader_workers");
}

}  // namespace ra::compare
