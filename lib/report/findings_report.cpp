// The forms of a report of findings (report/findings_report.h).
#include "report/findings_report.h"

#include <algorithm>

#include "core/printable.h"
#include "report/finding_forms.h"
#include "report/html_sections.h"
#include "report/junit.h"
#include "report/markup.h"

namespace ra::report {

using compare::CheckOutcome;
using compare::Finding;

std::string render_findings_text(const FindingsReport& r) {
  std::string out = printable("repro-audit: " + r.title) + "\n";
  for (const auto& [name, value] : r.properties)
    out += printable("  " + name + ": " + value) + "\n";
  for (const Finding& f : r.findings) out += finding_text(f);
  return out;
}

nlohmann::json findings_json(const FindingsReport& r) {
  nlohmann::json properties = nlohmann::json::object();
  for (const auto& [name, value] : r.properties) properties[name] = value;
  return {{"title", r.title},
          {"properties", properties},
          {"exit_code", compare::findings_exit_code(r.findings)},
          {"findings", compare::findings_json(r.findings)}};
}

std::string render_findings_junit(const FindingsReport& r) {
  const auto failures = std::count_if(r.findings.begin(), r.findings.end(),
                                      [](const Finding& f) { return finding_fails(f); });
  const auto skipped = std::count_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return f.outcome == CheckOutcome::skipped;
  });
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  out += "  <testsuite name=\"" + xml_escaped(printable(r.title)) + "\" tests=\"" +
         std::to_string(r.findings.size()) + "\" failures=\"" + std::to_string(failures) +
         "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\">\n";
  for (const Finding& f : r.findings) {
    out += "    <testcase classname=\"" + xml_escaped(printable(f.id)) + "\" name=\"" +
           xml_escaped(printable(f.name)) + "\" time=\"0.000\"";
    std::string body;
    for (const std::string& d : f.details) body += d + "\n";
    if (finding_fails(f)) {
      out += ">\n      <failure message=\"" + xml_escaped(printable(f.summary)) + "\" type=\"" +
             compare::to_string(f.outcome) + "\">" + xml_escaped(printable(body)) +
             "</failure>\n    </testcase>\n";
    } else if (f.outcome == CheckOutcome::skipped) {
      out += ">\n      <skipped message=\"" + xml_escaped(printable(f.summary)) +
             "\"/>\n    </testcase>\n";
    } else {
      out += ">\n      <system-out>" + xml_escaped(printable(f.summary + "\n" + body)) +
             "</system-out>\n    </testcase>\n";
    }
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

std::string render_findings_html(const FindingsReport& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>repro-audit: " + with_entities(printable(r.title)) + "</title>\n";
  out += "<style>" + std::string(html::page_style()) + "</style>\n</head>\n<body>\n";
  out += "<h1>repro-audit: " + with_entities(printable(r.title)) + "</h1>\n<table>\n";
  for (const auto& [name, value] : r.properties) {
    out += "<tr><th>" + with_entities(printable(name)) + "</th><td>" +
           with_entities(printable(value)) + "</td></tr>\n";
  }
  out += "</table>\n";
  for (const Finding& f : r.findings) out += finding_html(f);
  return out + "</body>\n</html>\n";
}

}  // namespace ra::report
