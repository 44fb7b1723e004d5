#pragma once
// A finding (DESIGN.md, "Findings as data"): one check's verdict and everything each report form
// shows of it, made in one place (the finding's section file, e.g. compare/invariance_finding.cpp)
// and rendered by the forms without interpretation: the text and HTML show the summary, the
// details and the table; JUnit makes one case of it, failing where the outcome is not a pass; the
// JSON holds the outcome and the data; the exit code follows from the outcomes
// (findings_exit_code). No form decides anything a finding did not say.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/verdict.h"

namespace ra::compare {

// A table of a finding (rows of cells, the header's columns): text aligns it, HTML makes a <table>,
// JSON keeps its own data instead.
struct FindingTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// A plot of a finding (the HTML form draws it; text and JSON carry its numbers elsewhere): curves
// over one x axis, on a linear or logarithmic y axis.
struct FindingCurve {
  std::string label;
  std::vector<double> x, y;
};
struct FindingPlot {
  std::string title, x_label, y_label;
  bool log_y = false;
  std::vector<FindingCurve> curves;  // none: no plot
  std::optional<double> marker_x;    // a vertical line (where a verdict changes)
  std::string marker_label;
};

struct Finding {
  std::string id;    // the JSON key and JUnit class: "invariance"
  std::string name;  // the heading and JUnit case name: "batch invariance"
  CheckOutcome outcome = CheckOutcome::skipped;
  std::string summary;                  // one sentence: the verdict in words
  std::vector<std::string> details;     // lines of evidence, in the order a reader needs them
  FindingTable table;                   // optional: rows of evidence (e.g. per batch size)
  std::vector<std::string> next_steps;  // commands the tool accepts, most useful first
  nlohmann::json data;                  // the JSON form's own fields
  FindingPlot plot;                     // optional: drawn in the HTML form
};

// The exit status of a report made of findings: 1 if any failed; else 6 if any was inconclusive;
// else 0 (core/error.h).
int findings_exit_code(const std::vector<Finding>& findings);
// {"name", "outcome", "summary", "next_steps", "data"}: a finding's JSON form, under its id.
nlohmann::json finding_json(const Finding& finding);
// {id: finding_json, ...} in order.
nlohmann::json findings_json(const std::vector<Finding>& findings);
// "PASSED", "FAILED", "INCONCLUSIVE", "ALLOWED", "SKIPPED": the word a report leads with.
const char* outcome_word(CheckOutcome outcome);

}  // namespace ra::compare
