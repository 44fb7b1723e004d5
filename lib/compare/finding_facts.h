#pragma once
// The typed evidence (Finding::facts) of the registered checks whose findings other phases of the
// comparison and the report's sections read (compare/checks.h): the next step reads the resumes,
// the collective and the loader's workers; the perturbation control reads the instability's
// reference run. Each accessor finds its check's finding in ComparisonResult::findings.
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::compare {

// Each resumed run's restore (empty when none; compare/resume_finding.cpp).
const std::vector<ResumeVerdict>& resumes_of(const ComparisonResult& r);
// A data-parallel audit's ranks and replicas (compare/data_parallel_finding.cpp), or null.
const DistributedFindings* distributed_of(const ComparisonResult& r);
// What the traces recorded of their loaders' workers (compare/loader_workers_finding.cpp), or null.
const LoaderWorkerFindings* loader_workers_of(const ComparisonResult& r);
// Where the runs' environments and algorithm ledgers differ (compare/environment_finding.cpp).
struct EnvironmentFindings {
  std::vector<std::string> environment;  // "cpu_model: A (run 0) vs B (run 3)"
  std::vector<LedgerDifference> ledger;
};
const EnvironmentFindings& environment_of(const ComparisonResult& r);
// A perturbed group's instability (compare/instability_finding.cpp), or null.
const InstabilityFindings* instability_of(const ComparisonResult& r);
// What the reader must know before trusting the verdict, in the order it is told
// (compare/warnings_finding.cpp); empty when none.
struct AuditWarnings {
  std::vector<std::string> lines;
};
const std::vector<std::string>& warnings_of(const ComparisonResult& r);
// How the steps were launched with --cuda-graphs on (compare/step_launches_finding.cpp), or null
// when no run asked.
struct StepLaunches {
  std::vector<std::optional<trace::StepLaunchRecord>> runs;  // as ComparisonResult::runs
  trace::StepLaunchRecord sum;                               // over the runs that asked
};
const StepLaunches* step_launches_of(const ComparisonResult& r);

}  // namespace ra::compare
