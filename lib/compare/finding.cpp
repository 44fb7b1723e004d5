// The exit status and words of findings (compare/finding.h).
#include "compare/finding.h"

#include <algorithm>

#include "core/error.h"

namespace ra::compare {

int findings_exit_code(const std::vector<Finding>& findings) {
  const auto any = [&](CheckOutcome o) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.outcome == o; });
  };
  if (any(CheckOutcome::failed)) return static_cast<int>(ExitCode::divergence);
  if (any(CheckOutcome::inconclusive)) return static_cast<int>(ExitCode::inconclusive);
  return static_cast<int>(ExitCode::ok);
}

CheckOutcome combined_outcome(const std::vector<FindingPart>& parts) {
  const auto any = [&](CheckOutcome o) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const FindingPart& p) { return p.outcome == o; });
  };
  for (CheckOutcome o : {CheckOutcome::failed, CheckOutcome::inconclusive, CheckOutcome::allowed,
                         CheckOutcome::passed}) {
    if (any(o)) return o;
  }
  return CheckOutcome::skipped;
}

const Finding* finding_of(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

nlohmann::json finding_json(const Finding& f) {
  return {{"name", f.name},
          {"outcome", to_string(f.outcome)},
          {"summary", f.summary},
          {"next_steps", f.next_steps},
          {"data", f.data}};
}

nlohmann::json findings_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::object();
  for (const Finding& f : findings) {
    if (!f.own_section) out[f.id] = finding_json(f);
  }
  return out;
}

const char* outcome_word(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::passed:
      return "PASSED";
    case CheckOutcome::failed:
      return "FAILED";
    case CheckOutcome::allowed:
      return "ALLOWED";
    case CheckOutcome::skipped:
      return "SKIPPED";
    case CheckOutcome::inconclusive:
      return "INCONCLUSIVE";
  }
  return "?";
}

}  // namespace ra::compare
