#pragma once
// The registered checks (DESIGN.md, "Findings as data"): each an id, whether it applies to the
// traces, and its evaluation into one finding (compare/finding.h). compare_traces runs every
// check that applies, after the spine (categories, first divergence, root cause, growth), into
// ComparisonResult::findings; the verdict (compare/verdict.h) and every report form read those.
// A new check: one section file with its evaluate (and its words), one line in checks.cpp, one
// test (docs/architecture.md, "Adding a check").
#include <optional>
#include <string>
#include <vector>

#include "compare/finding.h"
#include "trace/trace.h"

namespace ra::compare {

struct ComparisonResult;     // compare/compare.h
struct ComparisonOptions;    // compare/compare.h
struct DistributedFindings;  // compare/compare.h
struct ResumeVerdict;        // compare/resume_check.h

// What a check reads: the traces, the spine of the comparison already made, the inputs the
// comparison was given (an option such as --align is one: it decides whether a check applies),
// and the findings of the checks before it in the registry (ComparisonResult::findings is filled
// only after the last check: read an earlier check's facts from `earlier`, as facts_of does).
struct CheckContext {
  const std::vector<trace::Trace>& traces;
  const ComparisonResult& result;
  const ComparisonOptions& options;
  const std::vector<Finding>& earlier;
};

struct RegisteredCheck {
  const char* id;
  bool (*applies)(const CheckContext&);
  Finding (*evaluate)(const CheckContext&);
};

// In the order their findings are reported.
const std::vector<RegisteredCheck>& registered_checks();
std::vector<Finding> run_checks(const std::vector<trace::Trace>& traces,
                                const ComparisonResult& result, const ComparisonOptions& options);

// The checks, each in its own section file.
// Each resumed run's restore against the uninterrupted run (compare/resume_finding.cpp).
bool resume_applies(const CheckContext& context);
Finding resume_finding(const CheckContext& context);
// The finding of resumes already checked (what resume_finding makes of them).
Finding resume_finding_of(std::vector<ResumeVerdict> resumes, bool expect_identical);
// A data-parallel audit: world sizes, ranks, replicas, collective
// (compare/data_parallel_finding.cpp).
bool data_parallel_applies(const CheckContext& context);
Finding data_parallel_finding(const CheckContext& context);
// The finding of a comparison's world sizes and a data-parallel audit's findings, if any.
Finding data_parallel_finding_of(const ComparisonResult& r,
                                 std::optional<DistributedFindings> found);
// A PyTorch loader's workers that start from a random stream alike
// (compare/loader_workers_finding.cpp).
bool loader_workers_applies(const CheckContext& context);
Finding loader_workers_finding(const CheckContext& context);
// Where the runs' environments and algorithm ledgers differ (compare/environment_finding.cpp).
bool environment_applies(const CheckContext& context);
Finding environment_finding(const CheckContext& context);
// A perturbed group's instability, per metric (compare/instability_finding.cpp).
bool instability_applies(const CheckContext& context);
Finding instability_finding(const CheckContext& context);
bool perturbation_control_applies(const CheckContext& context);  // compare/perturbation_control.cpp
Finding perturbation_control(const CheckContext& context);
// With --align: the two programs' op records aligned (compare/alignment_finding.cpp). InputError
// when a window step recorded by both cannot be found (compare/program_alignment.h).
bool program_alignment_applies(const CheckContext& context);
Finding program_alignment(const CheckContext& context);
// With --expect equivalent: program B's losses against the floor of A's perturbed runs
// (compare/equivalence_finding.cpp).
bool equivalence_applies(const CheckContext& context);
Finding equivalence(const CheckContext& context);
// How the runs' steps were launched with --cuda-graphs on, per run and summed
// (compare/step_launches_finding.cpp).
bool step_launches_applies(const CheckContext& context);
Finding step_launches_finding(const CheckContext& context);
// What the reader must know before trusting the verdict: copies of one run, switches set
// differently, the recorder's warnings, seeds that never applied, perturbed runs that start apart
// elsewhere (compare/warnings_finding.cpp). Last: it reads the instability's finding.
bool warnings_applies(const CheckContext& context);
Finding warnings_finding(const CheckContext& context);
// The finding of warnings already made (a report's test, or a caller's own).
Finding warnings_finding_of(std::vector<std::string> warnings);

}  // namespace ra::compare
