// The warnings section (report/sections.h): the warnings finding (compare/warnings_finding.cpp) in
// every form: in words right after the verdict, a WARNING line each, wrapped and never cut (a cut
// would drop a long warning's fix, issue 61); in the HTML page a paragraph each under the banner;
// no JUnit case (it decides nothing); the JSON report's "warnings", always present.
#include "compare/finding_facts.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"

namespace ra::report {

std::string warnings_text(const compare::ComparisonResult& r, const compare::Finding&) {
  std::string out;
  for (const std::string& w : compare::warnings_of(r)) {
    // A line break between words, the rest indented; names files, so shown.
    out += text::wrapped("WARNING: " + text::shown(w), text::kMaxLineLength, "  ");
  }
  return out;
}

std::string warnings_html(const compare::ComparisonResult& r, const compare::Finding&) {
  std::string out;
  for (const std::string& w : compare::warnings_of(r)) {
    out += "<p class=\"warning\">WARNING: " + svg::html_escaped(w) + "</p>\n";
  }
  return out;
}

void warnings_json(const compare::ComparisonResult& r, const compare::Finding&,
                   nlohmann::json& report) {
  report["warnings"] = compare::warnings_of(r);
}

}  // namespace ra::report
