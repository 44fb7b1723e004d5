#pragma once
// A report made of findings alone (compare/finding.h): the batch-invariance audit's, in each form.
// Every form renders what each finding says, nothing more: the text and HTML its outcome,
// summary, details, table and next steps; JUnit one testcase per finding (failing unless it
// passed, was allowed or skipped); JSON the outcome and the finding's data. The exit status is
// compare::findings_exit_code over the same findings.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/finding.h"

namespace ra::report {

struct FindingsReport {
  std::string title;  // "batch invariance of Net (pytorch)"
  std::vector<std::pair<std::string, std::string>> properties;  // what was audited, in order
  std::vector<compare::Finding> findings;
};

std::string render_findings_text(const FindingsReport& report);
nlohmann::json findings_json(const FindingsReport& report);
std::string render_findings_junit(const FindingsReport& report);
std::string render_findings_html(const FindingsReport& report);

}  // namespace ra::report
