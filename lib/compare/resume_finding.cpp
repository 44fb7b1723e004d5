// The resume check as a registered check (compare/checks.h): each resumed run's restore
// (compare/resume_check.h) is a part of one finding, passed when exact, failed where identity was
// expected (allowed where it was not), skipped where run 0 recorded no state at the step. Its
// forms are the report's resume section (report/resume_section.cpp); its facts the verdicts.
#include <algorithm>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"
#include "compare/resume_check.h"

namespace ra::compare {

bool resume_applies(const CheckContext& c) {
  return std::any_of(c.traces.begin(), c.traces.end(),
                     [](const trace::Trace& t) { return !t.resume_points.empty(); });
}

Finding resume_finding(const CheckContext& c) {
  std::vector<Divergence> divergences;
  for (const CategoryVerdict& v : c.result.categories) {
    if (v.first) divergences.push_back(*v.first);
  }
  if (c.result.first_divergence) divergences.push_back(*c.result.first_divergence);
  return resume_finding_of(check_resumes(c.traces, divergences),
                           c.result.identity.expect_identical);
}

Finding resume_finding_of(std::vector<ResumeVerdict> resumes, bool expect_identical) {
  Finding f;
  f.id = "resume";
  f.name = "resume";
  f.own_section = true;
  const CheckOutcome differs = expect_identical ? CheckOutcome::failed : CheckOutcome::allowed;
  for (const ResumeVerdict& v : resumes) {
    f.parts.push_back(
        {"resume of run " + std::to_string(v.run) + " at step " + std::to_string(v.step),
         !v.compared ? CheckOutcome::skipped
         : v.exact() ? CheckOutcome::passed
                     : differs});
  }
  f.outcome = combined_outcome(f.parts);
  f.facts = std::move(resumes);
  return f;
}

const std::vector<ResumeVerdict>& resumes_of(const ComparisonResult& r) {
  static const std::vector<ResumeVerdict> none;
  const auto* resumes = facts_of<std::vector<ResumeVerdict>>(r.findings, "resume");
  return resumes == nullptr ? none : *resumes;
}

}  // namespace ra::compare
