// The registry of checks (compare/checks.h).
#include "compare/checks.h"

namespace ra::compare {

const std::vector<RegisteredCheck>& registered_checks() {
  static const std::vector<RegisteredCheck> checks = {
      {"resume", resume_applies, resume_finding},
      {"data_parallel", data_parallel_applies, data_parallel_finding},
      {"loader_workers", loader_workers_applies, loader_workers_finding},
      {"environment", environment_applies, environment_finding},
      {"instability", instability_applies, instability_finding},
      {"perturbation_control", perturbation_control_applies, perturbation_control},
      {"op_alignment", program_alignment_applies, program_alignment},
      {"equivalence", equivalence_applies, equivalence},
      {"step_launches", step_launches_applies, step_launches_finding},
      {"warnings", warnings_applies, warnings_finding},
  };
  return checks;
}

std::vector<Finding> run_checks(const std::vector<trace::Trace>& traces,
                                const ComparisonResult& result, const ComparisonOptions& options) {
  std::vector<Finding> findings;
  const CheckContext context{traces, result, options, findings};
  for (const RegisteredCheck& c : registered_checks()) {
    if (!c.applies(context)) continue;
    findings.push_back(c.evaluate(context));
    findings.back().id = c.id;
  }
  return findings;
}

}  // namespace ra::compare
