#include "report_output.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "core/atomic_file.h"
#include "core/error.h"
#include "json_output.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/text_report.h"

namespace ra::app {

int emit_report(const audit::ComparisonResult& result, const ReportFiles& files) {
  const std::string& json_path = files.json;
  // On stderr too: with --json - the report itself may go unread by a person.
  for (const std::string& w : result.warnings) spdlog::warn("{}", w);
  const std::string json = json_text(audit::to_json(result)) + "\n";
  if (json_path == "-") {
    std::fputs(json.c_str(), stdout);
  } else {
    std::fputs(report::render_text(result).c_str(), stdout);
    if (!json_path.empty()) write_file_atomic(json_path, json);
  }
  if (!files.junit.empty()) write_file_atomic(files.junit, report::render_junit(result));
  if (!files.html.empty()) write_file_atomic(files.html, report::render_html(result));
  std::fflush(stdout);
  // A divergence among the runs there is final (more runs cannot undo it); otherwise a verdict
  // over part of an audit is not the audit's.
  if (result.diverged()) return static_cast<int>(ExitCode::divergence);
  return result.incomplete() ? static_cast<int>(ExitCode::incomplete) : 0;
}

std::optional<bool> parse_expect(const std::string& expect) {
  if (expect == "identical") return true;
  if (expect == "any") return false;
  return std::nullopt;
}

}  // namespace ra::app
