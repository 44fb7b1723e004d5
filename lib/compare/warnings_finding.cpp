// The warnings as a registered check (compare/checks.h): what the reader must know of the traces
// before trusting the verdict, each a line the report leads with. Copies of one run, pinned cuDNN
// algorithms that are not deterministic, determinism switches set differently
// (compare_environment.cpp), the PyTorch recorder's own warnings, seeds that never reached a
// stream, an epoch counted from 1 (compare_recorder_checks.cpp), and perturbed runs whose start
// differs elsewhere too (the instability's finding, compare_instability.cpp). Evidence beside the
// verdict, never one: it passes, and applies to every comparison (the JSON report always has the
// list). Its forms are the report's warnings section (report/warnings_section.cpp).
#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/compare_phases.h"
#include "compare/duplicate_runs.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool warnings_applies(const CheckContext&) {
  return true;
}

Finding warnings_finding_of(std::vector<std::string> warnings) {
  Finding f;
  f.id = "warnings";  // as the registry names it, for a finding made outside it
  f.name = "warnings";
  f.own_section = true;
  f.outcome = CheckOutcome::passed;
  f.facts = AuditWarnings{std::move(warnings)};
  return f;
}

Finding warnings_finding(const CheckContext& c) {
  const std::vector<trace::Trace>& traces = c.traces;
  std::vector<std::string> lines;
  for (const auto& group : c.result.sources.copies) lines.push_back(copies_warning(traces, group));
  for (const std::optional<std::string>& w : {phases::pinned_nondeterministic_warning(traces),
                                              phases::determinism_flags_warning(traces)}) {
    if (w) lines.push_back(*w);
  }
  for (std::string& w : phases::recorder_warnings(traces)) lines.push_back(std::move(w));
  for (auto warning : {phases::unapplied_seeds_warning, phases::empty_first_epoch_warning}) {
    if (std::optional<std::string> w = warning(traces)) lines.push_back(std::move(*w));
  }
  if (const auto* found = facts_of<InstabilityFindings>(c.earlier, "instability")) {
    for (std::string& w : phases::perturbation_warnings(*found)) lines.push_back(std::move(w));
  }
  return warnings_finding_of(std::move(lines));
}

const std::vector<std::string>& warnings_of(const ComparisonResult& r) {
  static const std::vector<std::string> none;
  const auto* found = facts_of<AuditWarnings>(r.findings, "warnings");
  return found == nullptr ? none : found->lines;
}

}  // namespace ra::compare
