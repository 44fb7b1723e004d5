#include "report_output.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compare/finding_facts.h"
#include "compare/verdict.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "json_output.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "rundir/audit_folder.h"
#include "rundir/shard.h"

namespace ra::app {

// (report_output.h)
void write_stdout(const std::string& text) {
  errno = 0;
  const bool written = std::fputs(text.c_str(), stdout) >= 0 && std::fflush(stdout) == 0;
  if (written) return;
  const int e = errno;
  if (e == EPIPE) {
    spdlog::warn(
        "stdout was closed before the whole report was read (its reader ended); the "
        "report files are whole and the exit code is the verdict's");
    return;
  }
  throw InputError(std::string("cannot write the report to stdout: ") + std::strerror(e));
}

void write_report_forms(const ReportFiles& files, const ReportForms& forms) {
  if (!files.json.empty() && files.json != "-") write_file_atomic(files.json, forms.json);
  if (!files.junit.empty()) write_file_atomic(files.junit, forms.junit());
  if (!files.html.empty()) write_file_atomic(files.html, forms.html());
  write_stdout(files.json == "-" ? forms.json : forms.text());
}

int emit_report(const compare::ComparisonResult& result, const ReportFiles& files) {
  // On stderr too: with --json - the report itself may go unread by a person.
  for (const std::string& w : compare::warnings_of(result)) spdlog::warn("{}", w);
  write_report_forms(
      files,
      {json_text(report::render_json(result)) + "\n", [&] { return report::render_junit(result); },
       [&] { return report::render_html(result); }, [&] { return report::render_text(result); }});
  // The verdict's own exit code (compare/verdict.h), from the checks every report form reads.
  return compare::audit_verdict(result).exit_code();
}

std::optional<bool> parse_expect(const std::string& expect) {
  if (expect == "identical") return true;
  if (expect == "any") return false;
  return std::nullopt;
}

// A shard reports what it did and how far the audit is; the report is compare's, once every
// shard has finished.
int print_shard_outcome(const audit::ShardOutcome& s, const std::filesystem::path& out) {
  std::printf("shard %s: run(s) %s of %d planned%s\n", rundir::shard_text(s.shard).c_str(),
              rundir::run_numbers(s.runs).c_str(), s.planned_runs,
              s.already_whole.empty()
                  ? ""
                  : (" (already whole: " + rundir::run_numbers(s.already_whole) + ")").c_str());
  if (s.missing_runs.empty()) {
    std::printf(
        "audit complete: every planned run has a whole trace; report: repro-audit "
        "compare %s\n",
        out.c_str());
  } else {
    std::printf(
        "audit not complete yet: run(s) %s of other shards missing; once every shard has "
        "finished: repro-audit compare %s\n",
        rundir::run_numbers(s.missing_runs).c_str(), out.c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace ra::app
