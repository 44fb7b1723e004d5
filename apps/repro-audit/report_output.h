#pragma once
// Shared by `run` and `compare`: prints the report and maps the verdict to the exit code.
#include <string>

#include "compare/compare.h"

namespace ra::app {

// Text report on stdout (unless json_path is "-": then stdout is the JSON report alone); the JSON
// report written atomically to json_path, the JUnit XML report (report/junit.h) to junit_path,
// the HTML report (report/html_report.h) to html_path, when given. Returns 0, 1 when runs
// diverged where equality was expected, else 4 when an audit folder's planned runs are not all
// whole (an incomplete audit).
struct ReportFiles {
  std::string json, junit, html;
};
int emit_report(const audit::ComparisonResult& result, const ReportFiles& files);

// "identical" -> true, "any" -> false, "" -> nullopt (the default of the mode).
std::optional<bool> parse_expect(const std::string& expect);

}  // namespace ra::app
