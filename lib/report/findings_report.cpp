// The forms of a report of findings (report/findings_report.h).
#include "report/findings_report.h"

#include <algorithm>

#include "core/printable.h"
#include "report/junit.h"
#include "report/markup.h"

namespace ra::report {
namespace {

using compare::CheckOutcome;
using compare::Finding;

// Columns padded to their widest cell, two spaces apart.
std::string aligned(const compare::FindingTable& t) {
  if (t.rows.empty()) return "";
  std::vector<std::size_t> width(t.columns.size(), 0);
  const auto widen = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  widen(t.columns);
  for (const auto& row : t.rows) widen(row);
  const auto line = [&](const std::vector<std::string>& row) {
    std::string out = "   ";
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      out += " " + row[i] +
             (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 1, ' ') : std::string());
    }
    return out + "\n";
  };
  std::string out = line(t.columns);
  for (const auto& row : t.rows) out += line(row);
  return out;
}

bool fails(CheckOutcome o) {
  return o == CheckOutcome::failed || o == CheckOutcome::inconclusive;
}

std::string html_cell(const std::string& tag, const std::string& text) {
  return "<" + tag + ">" + with_entities(printable(text)) + "</" + tag + ">";
}

std::string html_table(const compare::FindingTable& t) {
  if (t.rows.empty()) return "";
  std::string out = "<table>\n<tr>";
  for (const std::string& c : t.columns) out += html_cell("th", c);
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const std::string& c : row) out += html_cell("td", c);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string html_finding(const Finding& f) {
  const std::string cls = f.outcome == CheckOutcome::passed    ? "ok"
                          : f.outcome == CheckOutcome::allowed ? "allowed"
                          : fails(f.outcome)                   ? "diverged"
                                                               : "none";
  std::string out = "<h2>" + with_entities(printable(f.name)) + "</h2>\n<div class=\"banner " +
                    cls + "\">" + with_entities(printable(f.summary)) + "</div>\n<ul>\n";
  for (const std::string& d : f.details) out += html_cell("li", d) + "\n";
  out += "</ul>\n" + html_table(f.table);
  for (const std::string& s : f.next_steps) out += "<p>Next: " + html_cell("code", s) + "</p>\n";
  return out;
}

constexpr const char* kFindingsStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1000px; margin: 24px auto;
       padding: 0 16px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.banner { padding: 12px 16px; border-radius: 6px; font-weight: 600; }
.banner.ok { background: #e3f4e1; border: 1px solid #59a14f; }
.banner.allowed { background: #fdf3d8; border: 1px solid #edc948; }
.banner.diverged { background: #fbe1e1; border: 1px solid #e15759; }
.banner.none { background: #eee; border: 1px solid #aaa; }
table { border-collapse: collapse; margin: 4px 0; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #ddd; }
)";

}  // namespace

std::string render_findings_text(const FindingsReport& r) {
  // Every piece from outside the tool (a model's or a module's name) escaped, line by line.
  std::string out;
  const auto line = [&](const std::string& text) { out += printable(text) + "\n"; };
  line("repro-audit: " + r.title);
  for (const auto& [name, value] : r.properties) line("  " + name + ": " + value);
  for (const Finding& f : r.findings) {
    out += "\n";
    line(f.name + ": " + f.summary);
    for (const std::string& d : f.details) line("  " + d);
    compare::FindingTable table = f.table;
    for (std::string& c : table.columns) c = printable(c);
    for (auto& row : table.rows) {
      for (std::string& c : row) c = printable(c);
    }
    out += aligned(table);
    for (const std::string& s : f.next_steps) line("next step: " + s);
  }
  return out;
}

nlohmann::json findings_json(const FindingsReport& r) {
  nlohmann::json properties = nlohmann::json::object();
  for (const auto& [name, value] : r.properties) properties[name] = value;
  nlohmann::json findings = nlohmann::json::object();
  for (const Finding& f : r.findings) {
    findings[f.id] = {{"name", f.name},
                      {"outcome", compare::to_string(f.outcome)},
                      {"summary", f.summary},
                      {"next_steps", f.next_steps},
                      {"data", f.data}};
  }
  return {{"title", r.title},
          {"properties", properties},
          {"exit_code", compare::findings_exit_code(r.findings)},
          {"findings", findings}};
}

std::string render_findings_junit(const FindingsReport& r) {
  const auto failures = std::count_if(r.findings.begin(), r.findings.end(),
                                      [](const Finding& f) { return fails(f.outcome); });
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
    if (fails(f.outcome)) {
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
  out += "<style>" + std::string(kFindingsStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>repro-audit: " + with_entities(printable(r.title)) + "</h1>\n<table>\n";
  for (const auto& [name, value] : r.properties) {
    out += "<tr>" + html_cell("th", name) + html_cell("td", value) + "</tr>\n";
  }
  out += "</table>\n";
  for (const Finding& f : r.findings) out += html_finding(f);
  return out + "</body>\n</html>\n";
}

}  // namespace ra::report
