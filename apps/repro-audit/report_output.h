#pragma once
// Shared by `run`, `exec` and `compare`: prints the report (or a shard's outcome) and maps the
// verdict to the exit code.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "audit/audit_options.h"
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
int emit_report(const compare::ComparisonResult& result, const ReportFiles& files);

// One report's forms: the files asked for (JSON, JUnit, HTML; each made only when asked for),
// then stdout: the text, or the JSON alone with --json -. Files first, stdout last: a reader of
// stdout that goes away early cannot lose them.
struct ReportForms {
  std::string json;  // with its final newline
  std::function<std::string()> junit, html, text;
};
void write_report_forms(const ReportFiles& files, const ReportForms& forms);

// What a shard of `run --shard` or `exec --shard` did and how far the audit is (a shard makes no
// report: compare's, once every shard has finished); returns 0.
int print_shard_outcome(const audit::ShardOutcome& s, const std::filesystem::path& out);

// Writes a report to stdout. A reader that has gone (`| head -1`: EPIPE, SIGPIPE being ignored)
// costs nothing already written: the files are whole, the verdict's exit code stands, and stderr
// says so. Any other failure (a full disk under a redirection) is an error naming it.
void write_stdout(const std::string& text);

// "identical" -> true, "any" -> false, "" -> nullopt (the default of the mode).
std::optional<bool> parse_expect(const std::string& expect);

}  // namespace ra::app
