#pragma once
// One JUnit testcase (report/junit.h), as the report's own cases and a section's
// (report/sections.h) give it: numbered and written as XML by render_junit.
#include <string>

namespace ra::report {

// Passed, failed (with its message and detail), skipped, or passed with a note.
struct JunitCase {
  std::string name;  // after its number
  double time = 0;
  enum class Outcome { passed, failed, skipped } outcome = Outcome::passed;
  std::string message;  // the failure's or skip's message; for a pass, a note (system-out)
  std::string detail;   // the failure's text
  std::string failure_type = "divergence";
};

// One <property> of the suite, its name and value escaped (a section's, report/sections.h).
std::string junit_property(const std::string& name, const std::string& value);

}  // namespace ra::report
