#pragma once
// A finding (DESIGN.md, "Findings as data"): one check's verdict and everything each report form
// shows of it, made in one place (the finding's section file, e.g. compare/invariance_finding.cpp)
// and rendered by the forms without interpretation: the text and HTML show the summary, the
// details and the table; JUnit makes one case of it, failing where the outcome is not a pass; the
// JSON holds the outcome and the data; the exit code follows from the outcomes
// (findings_exit_code). No form decides anything a finding did not say.
#include <any>
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

// One verdict among several that a finding holds (each resumed run's restore, each rank of a
// data-parallel audit): a JUnit case of its own, and its part of the finding's outcome.
struct FindingPart {
  std::string name;
  CheckOutcome outcome = CheckOutcome::skipped;
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
  std::vector<FindingPart> parts;       // optional: the verdicts the outcome combines
  // A finding whose forms are a section of the report module's (report/sections.h): the layout
  // its text, HTML, JUnit and JSON had before it was a finding is kept there, read from `facts`,
  // the check's typed evidence; the generic forms and the JSON's "findings" leave it out.
  bool own_section = false;
  std::any facts;
};

// The outcome of several verdicts: failed if any failed, else inconclusive, allowed, passed if
// any was, else skipped.
CheckOutcome combined_outcome(const std::vector<FindingPart>& parts);
// The finding of check `id`, or null.
const Finding* finding_of(const std::vector<Finding>& findings, const std::string& id);
// The typed evidence of check `id`'s finding, or null when there is none of type T.
template <class T>
const T* facts_of(const std::vector<Finding>& findings, const std::string& id) {
  const Finding* f = finding_of(findings, id);
  return f == nullptr ? nullptr : std::any_cast<T>(&f->facts);
}

// The exit status of a report made of findings: 1 if any failed; else 6 if any was inconclusive;
// else 0 (core/error.h).
int findings_exit_code(const std::vector<Finding>& findings);
// {"name", "outcome", "summary", "next_steps", "data"}: a finding's JSON form, under its id.
nlohmann::json finding_json(const Finding& finding);
// {id: finding_json, ...} in order, of the findings without a section of their own.
nlohmann::json findings_json(const std::vector<Finding>& findings);
// "PASSED", "FAILED", "INCONCLUSIVE", "ALLOWED", "SKIPPED": the word a report leads with.
const char* outcome_word(CheckOutcome outcome);

}  // namespace ra::compare
