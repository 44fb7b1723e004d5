// The JUnit XML report (report/junit.h, docs/ci.md "JUnit XML").
#include "report/junit.h"

#include <cmath>

#include "compare/verdict.h"
#include "core/printable.h"
#include "report/finding_forms.h"
#include "report/markup.h"
#include "report/sections.h"
#include "report/text_format.h"
#include "report/text_report.h"
#include "report/text_sections.h"

namespace ra::report {
namespace {

using compare::CategoryVerdict;
using compare::ComparisonResult;
using text::format;

// An attribute value: printable first, so a newline in a name is a visible "\n", not a line
// break a reader would fold into a space.
std::string attribute(const std::string& text) {
  return xml_escaped(printable(text));
}

std::string seconds(double s) {
  return format("%.3f", s);
}

double total_seconds(const ComparisonResult& r) {
  double total = 0;
  for (const auto& run : r.runs) total += run.total_seconds;
  return total;
}

using Case = JunitCase;

std::string case_xml(const Case& c, const std::string& classname) {
  std::string out = "    <testcase classname=\"" + attribute(classname) + "\" name=\"" +
                    attribute(c.name) + "\" time=\"" + seconds(c.time) + "\"";
  switch (c.outcome) {
    case Case::Outcome::failed:
      return out + ">\n      <failure message=\"" + attribute(c.message) + "\" type=\"" +
             attribute(c.failure_type) + "\">" + xml_escaped(c.detail) +
             "</failure>\n    </testcase>\n";
    case Case::Outcome::skipped:
      return out + ">\n      <skipped message=\"" + attribute(c.message) +
             "\"/>\n    </testcase>\n";
    case Case::Outcome::passed:
      if (c.message.empty()) return out + "/>\n";
      return out + ">\n      <system-out>" + xml_escaped(c.message) + "</system-out>\n" +
             "    </testcase>\n";
  }
  return out + "/>\n";
}

// The overall verdict, failing on a divergence where identity was expected (its message is where
// the runs first part and why: what a CI page shows first), and on an audit that compared nothing
// (unless --allow-empty). The failure's text holds what the message does not: the verdict, the
// classes, the root cause's details and the next step, never the message again.
Case verdict_case(const ComparisonResult& r, const compare::AuditVerdict& v) {
  Case c;
  c.name = "1 verdict";
  c.time = total_seconds(r);
  const std::string verdict = text::verdict(r);
  const std::string head = text::first_line(verdict);
  if (r.nothing_compared()) {
    c.outcome = r.identity.allow_empty ? Case::Outcome::skipped : Case::Outcome::failed;
    c.failure_type = "nothing-compared";
    c.message = head;
    c.detail = verdict;
  } else if (v.status == compare::AuditStatus::diverged) {
    c.outcome = Case::Outcome::failed;
    const std::string first = text::first_divergence(r), cause = text::root_cause(r);
    c.message = r.first_divergence ? text::first_line(first) : head;
    if (!cause.empty()) c.message += "; " + text::first_line(cause);
    c.detail = text::cut_long_lines(verdict + text::after_first_line(first) +
                                    text::after_first_line(cause) + text::next_step(r));
  } else {
    c.message = head;
  }
  return c;
}

// Whether the audit folders' planned runs are all there: fails on an incomplete audit (a shard
// not finished), whose verdict is over part of the runs.
Case completeness_case(const ComparisonResult& r) {
  Case c;
  c.name = "2 complete audit";
  const std::string folders = text::audit_folders(r);
  if (r.incomplete()) {
    c.outcome = Case::Outcome::failed;
    c.failure_type = "incomplete";
    c.message = folders.substr(0, folders.find('\n'));
    c.detail = folders;
  } else {
    std::size_t whole = 0;
    for (const auto& f : r.sources.audit_folders) whole += f.runs.size();
    c.message = format("every planned run has a whole trace (%zu)", whole);
  }
  return c;
}

// One category: fails where the identity check fails (compare/verdict.h) and the category
// differs. Numbered after the verdict in causal order, so that a viewer sorting cases by name
// shows them as they happened.
Case category_case(const ComparisonResult& r, const compare::AuditVerdict& verdict,
                   const CategoryVerdict& v, std::size_t position) {
  Case c;
  c.name = std::to_string(3 + position) + " " + text::category_title(v.category);
  if (r.identity.compared_runs.size() < 2) {
    c.outcome = Case::Outcome::skipped;
    c.message = "no same-seed pair to compare";
    return c;
  }
  if (v.identical) return c;
  std::string what = "differs";
  if (v.first) {
    const std::string where = text::where(*v.first);  // "step 3 (...)" or "before step 0"
    what = "first differs " + std::string(where.starts_with("step") ? "at " : "") + where +
           ", in " + text::divergence_tensor(*v.first) + " (runs " +
           text::run_list(v.first->runs_differing) + " differ from run " +
           std::to_string(r.identity.compared_runs.front()) + ")";
  }
  what += format("; %lld steps differ", static_cast<long long>(v.steps_differing));
  if (verdict.failed(compare::CheckKind::identity)) {
    c.outcome = Case::Outcome::failed;
    c.message = what;  // the whole of it: no text repeats it
  } else if (r.identity.expect_identical) {
    c.message = what + " (allowed: the runs differ only between world sizes, a configuration)";
  } else {
    c.message = what + " (allowed: bitwise identity was not expected)";
  }
  return c;
}

// A registered check's finding (compare/checks.h): fails where the finding fails a CI gate
// (failed, inconclusive), skipped where it was skipped.
Case finding_case(const compare::Finding& f, std::size_t number) {
  Case c;
  c.name = std::to_string(number) + " " + f.name;
  c.message = f.summary;
  if (finding_fails(f)) {
    c.outcome = Case::Outcome::failed;
    c.failure_type = compare::to_string(f.outcome);
    for (const std::string& d : f.details) c.detail += d + "\n";
  } else if (f.outcome == compare::CheckOutcome::skipped) {
    c.outcome = Case::Outcome::skipped;
  }
  return c;
}

// What a CI page needs beside the cases; per-run facts are in the JSON report.
std::string properties(const ComparisonResult& r) {
  std::string out = "    <properties>\n";
  out += junit_property("spec_name", r.subject.spec_name);
  out += junit_property("mode", r.subject.mode_summary);
  out += junit_property("expect_identical", r.identity.expect_identical ? "true" : "false");
  out += junit_property("compared_runs", text::run_list(r.identity.compared_runs));
  out += junit_property("outcome_classes", std::to_string(r.identity.classes.size()));
  for (const compare::Finding& f : r.findings) {
    const Section* s = section_of(f);
    if (s != nullptr && s->junit_properties != nullptr) out += s->junit_properties(r, f);
  }
  return out + "    </properties>\n";
}

}  // namespace

std::string xml_escaped(const std::string& text) {
  // Line by line through printable (which keeps UTF-8 and escapes every control character), so
  // that newlines and tabs stay as they are in element text.
  std::string safe;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find_first_of("\n\t", start);
    if (end == std::string::npos) end = text.size();
    safe += printable(std::string_view(text).substr(start, end - start));
    if (end < text.size()) safe += text[end];
    start = end + 1;
  }
  // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are valid UTF-8 but not XML characters.
  std::string chars;
  for (std::size_t i = 0; i < safe.size(); ++i) {
    if (static_cast<unsigned char>(safe[i]) == 0xEF && i + 2 < safe.size() &&
        static_cast<unsigned char>(safe[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(safe[i + 2]) & 0xFE) == 0xBE) {
      chars += safe[i + 2] == '\xBE' ? "\\uFFFE" : "\\uFFFF";
      i += 2;
      continue;
    }
    chars += safe[i];
  }
  return with_entities(chars);
}

std::string junit_property(const std::string& name, const std::string& value) {
  return "      <property name=\"" + attribute(name) + "\" value=\"" + attribute(value) + "\"/>\n";
}

// Every case's outcome is a check's of the audit's one verdict (compare/verdict.h): a case fails
// exactly where the exit code says the audit failed.
std::string render_junit(const ComparisonResult& r) {
  const compare::AuditVerdict v = compare::audit_verdict(r);
  std::vector<Case> cases{verdict_case(r, v)};
  if (!r.sources.audit_folders.empty()) cases.push_back(completeness_case(r));
  for (std::size_t i = 0; i < r.categories.size(); ++i) {
    cases.push_back(category_case(r, v, r.categories[i], i));
  }
  // The registered checks' findings, numbered after the categories whether or not the audit
  // folder's case (2) is there, as the categories are: a section's cases (a resume each, a rank
  // each), else a case each, failing unless it passed.
  std::size_t number = 3 + r.categories.size();
  for (const compare::Finding& f : r.findings) {
    if (const Section* s = section_of(f)) {
      if (s->junit == nullptr) continue;
      for (Case& c : s->junit(r, f)) {
        c.name = std::to_string(number++) + " " + c.name;
        cases.push_back(std::move(c));
      }
    } else {
      cases.push_back(finding_case(f, number++));
    }
  }
  int failures = 0, skipped = 0;
  for (const Case& c : cases) {
    failures += c.outcome == Case::Outcome::failed ? 1 : 0;
    skipped += c.outcome == Case::Outcome::skipped ? 1 : 0;
  }
  const std::string suite = "repro-audit." + r.subject.spec_name;
  const std::string counts =
      format("tests=\"%zu\" failures=\"%d\" errors=\"0\"", cases.size(), failures);
  const std::string time = seconds(total_seconds(r));
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"repro-audit\" " + counts + " time=\"" + time + "\">\n";
  out += "  <testsuite name=\"" + attribute(suite) + "\" " + counts +
         format(" skipped=\"%d\"", skipped) + " time=\"" + time + "\">\n";
  out += properties(r);
  for (const Case& c : cases) out += case_xml(c, suite);
  out += "    <system-out>" + xml_escaped(render_text(r)) + "</system-out>\n";
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace ra::report
