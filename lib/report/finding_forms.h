#pragma once
// One finding (compare/finding.h) in the text and HTML forms, as every report that holds findings
// shows it: the audit's report (report/text_report.h, report/html_report.h) and a report of
// findings alone (report/findings_report.h). JUnit's case of a finding: report/junit.cpp.
#include <string>

#include "compare/finding.h"

namespace ra::report {

// "NAME: SUMMARY", the details indented, the table aligned, "next step: CMD"; every piece from
// outside the tool escaped (core/printable.h). Starts with an empty line.
std::string finding_text(const compare::Finding& f);
// An <h2>, a banner coloured by the outcome, the details as a list, the table, the next steps.
std::string finding_html(const compare::Finding& f);
// Whether a CI gate fails on the finding: failed or inconclusive.
bool finding_fails(const compare::Finding& f);

}  // namespace ra::report
