// The environment section (report/sections.h): the environment finding
// (compare/environment_finding.cpp) in every form: in words after the audit folders, each
// fingerprint key and algorithm-ledger geometry that differs between the runs; in the HTML page a
// list after the statistics; no JUnit case (it decides nothing); the JSON report's
// "environment_differences" and "ledger_differences", always present.
#include "compare/finding_facts.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {

std::string environment(const ComparisonResult& r) {
  const compare::EnvironmentFindings& f = compare::environment_of(r);
  std::string out;
  for (const std::string& e : f.environment) {
    out += "environment differs: " + shown(e) + "\n";
  }
  // At most this many geometries and directions get a line; the rest are counted.
  constexpr std::size_t kLedgerShown = 16;
  for (std::size_t i = 0; i < f.ledger.size() && i < kLedgerShown; ++i) {
    out += "algorithm ledger differs: " + ledger_difference_text(f.ledger[i]) + "\n";
  }
  if (f.ledger.size() > kLedgerShown) {
    out += format(
        "algorithm ledger differs in %zu more geometries and directions (JSON: "
        "ledger_differences)\n",
        f.ledger.size() - kLedgerShown);
  }
  return out;
}

}  // namespace ra::report::text

namespace ra::report {

std::string environment_text(const compare::ComparisonResult& r, const compare::Finding&) {
  return text::environment(r);
}

std::string environment_html(const compare::ComparisonResult& r, const compare::Finding&) {
  const compare::EnvironmentFindings& f = compare::environment_of(r);
  if (f.environment.empty() && f.ledger.empty()) return "";
  std::string out = "<h2>Environment and algorithm ledger differences</h2>\n<ul>\n";
  for (const std::string& d : f.environment) {
    out += "<li>" + svg::html_escaped(d) + "</li>\n";
  }
  for (const compare::LedgerDifference& d : f.ledger) {
    out += "<li>" + svg::html_escaped(text::ledger_difference_text(d)) + "</li>\n";
  }
  return out + "</ul>\n";
}

void environment_json(const compare::ComparisonResult& r, const compare::Finding&,
                      nlohmann::json& report) {
  const compare::EnvironmentFindings& f = compare::environment_of(r);
  nlohmann::json ledger = nlohmann::json::array();
  for (const compare::LedgerDifference& d : f.ledger) {
    ledger.push_back({{"layer", d.layer},
                      {"direction", d.direction},
                      {"groups", compare::algorithm_groups_json(d.groups)}});
  }
  report["environment_differences"] = f.environment;
  report["ledger_differences"] = ledger;
}

}  // namespace ra::report
