#pragma once
// One verdict, every reader (compare/verdict.h): the exit code, the JSON's "diverged", the JUnit
// report's failures, the text's verdict line and the HTML banner of one comparison say the same
// thing. Issue 61's disagreements (exec exiting 0 under a failing JUnit report) are what this
// holds each report test's result to.
#include <catch2/catch.hpp>

#include <string>

#include "compare/compare.h"
#include "compare/verdict.h"
#include "core/error.h"
#include "report/html_report.h"
#include "report/junit.h"
#include "report/sections.h"
#include "report/text_report.h"
#include "support/golden.h"

namespace ra::test {

inline std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Checks every reader against the verdict; returns the exit code they agree on.
inline int readers_agree(const compare::ComparisonResult& r) {
  const compare::AuditVerdict v = compare::audit_verdict(r);
  const int exit_code = v.exit_code();
  const bool diverged = v.status == compare::AuditStatus::diverged;
  INFO("verdict status " << compare::to_string(v.status) << ", exit " << exit_code);
  CHECK(r.diverged() == diverged);
  CHECK(compare::to_json(r)["verdict"]["diverged"].get<bool>() == diverged);
  // A JUnit report fails some case exactly where the exit code fails the audit.
  const std::string junit = report::render_junit(r);
  CHECK((occurrences(junit, "<failure ") > 0) == (exit_code != 0));
  const std::string text = report::render_text(r);
  const std::string verdict_line = text.substr(0, text.find('\n', text.find('\n') + 1));
  INFO(verdict_line);
  CHECK((verdict_line.find("DIVERGED") != std::string::npos) == diverged);
  // The text names an exit code only where it is the verdict's.
  for (int code : {1, 4, 5, 6}) {
    if (code != exit_code)
      CHECK(verdict_line.find("exit " + std::to_string(code)) == std::string::npos);
  }
  CHECK((report::render_html(r).find("class=\"banner diverged\"") != std::string::npos) ==
        diverged);
  return exit_code;
}

// Every reader against the verdict, then each form against its golden file
// (tests/report/golden/<name>.txt, .json, .xml, and .html when `html`).
inline void check_golden_forms(const std::string& name, const compare::ComparisonResult& r,
                               bool html) {
  readers_agree(r);
  check_golden(name + ".txt", report::render_text(r));
  check_golden(name + ".json", report::render_json(r).dump(2) + "\n");
  check_golden(name + ".xml", report::render_junit(r));
  if (html) check_golden(name + ".html", report::render_html(r));
}

}  // namespace ra::test
