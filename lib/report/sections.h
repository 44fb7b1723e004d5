#pragma once
// The sections of findings that keep the forms they had before they were findings
// (compare/finding.h, Finding::own_section). A section file holds one finding's text, HTML,
// JUnit and JSON forms together, each read from the finding's facts and parts:
//   resume_section.cpp          each resumed run's restore (docs/resume.md)
//   data_parallel_section.cpp   world sizes, ranks, replicas, collective (docs/distributed.md)
//   loader_workers_section.cpp  a loader's workers that share a random stream (docs/pytorch.md)
//   instability_section.cpp     the perturbed group's instability finding (docs/statistics.md)
//   environment_section.cpp     environment and algorithm-ledger differences (docs/report.md)
//   step_launches_section.cpp   the steps' CUDA graph launches with --cuda-graphs (docs/report.md)
//   warnings_section.cpp        what the reader must know before trusting the verdict
// A finding without a section renders in the generic forms (report/finding_forms.h). The doctor's
// findings, of one run and not of a comparison, have their section in report/doctor_section.h.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "report/junit_case.h"

namespace ra::report {

// Where a section's text stands in the text report: right after the verdict, among the findings
// (after the first divergence), after the next step, after the audit folders, after the seed
// groups' statistics, or after the cost. Where its HTML stands: under the banner, among the
// findings, in the preformatted block of the divergence (its html then gives plain text, which
// that block escapes) before the next step, after the seed groups' plots, or after the statistics
// table. Each the place its form had before it was a finding.
enum class TextPlace {
  after_verdict,
  findings,
  after_next_step,
  after_audit_folders,
  after_seed_groups,
  after_cost
};
enum class HtmlPlace {
  after_banner,
  findings,
  divergence_block,
  after_seed_group_plots,
  after_statistics
};

struct Section {
  const char* id;  // the registered check's (compare/checks.cpp)
  TextPlace text_place;
  std::string (*text)(const compare::ComparisonResult&, const compare::Finding&);
  HtmlPlace html_place;
  // Null: nothing at a place of its own (the step launches are a column of the cost table).
  std::string (*html)(const compare::ComparisonResult&, const compare::Finding&);
  // Null: no case of its own (a finding that decides nothing).
  std::vector<JunitCase> (*junit)(const compare::ComparisonResult&, const compare::Finding&);
  // Null: no property of the suite (report/junit_case.h, junit_property).
  std::string (*junit_properties)(const compare::ComparisonResult&, const compare::Finding&);
  // Adds the finding's keys to the JSON report (compare::to_json's document).
  void (*json)(const compare::ComparisonResult&, const compare::Finding&, nlohmann::json&);
};

// The section of a finding with one (Finding::own_section), or null.
const Section* section_of(const compare::Finding& f);

// The findings' text (or HTML) at `place`, in the registry's order: a section's where the finding
// has one, else (among the findings) the generic form.
std::string findings_text(const compare::ComparisonResult& r, TextPlace place);
std::string findings_html(const compare::ComparisonResult& r, HtmlPlace place);

// The JSON report: compare::to_json's document with each section's keys.
nlohmann::json render_json(const compare::ComparisonResult& r);

// The sections' forms.
std::string resume_text(const compare::ComparisonResult& r, const compare::Finding& f);
std::string resume_html(const compare::ComparisonResult& r, const compare::Finding& f);
std::vector<JunitCase> resume_cases(const compare::ComparisonResult& r, const compare::Finding& f);
void resume_json(const compare::ComparisonResult& r, const compare::Finding& f, nlohmann::json&);

std::string data_parallel_text(const compare::ComparisonResult& r, const compare::Finding& f);
std::string data_parallel_html(const compare::ComparisonResult& r, const compare::Finding& f);
std::vector<JunitCase> data_parallel_cases(const compare::ComparisonResult& r,
                                           const compare::Finding& f);
void data_parallel_json(const compare::ComparisonResult& r, const compare::Finding& f,
                        nlohmann::json&);

std::string instability_text(const compare::ComparisonResult& r, const compare::Finding& f);
std::string instability_html(const compare::ComparisonResult& r, const compare::Finding& f);
std::string instability_properties(const compare::ComparisonResult& r, const compare::Finding& f);
void instability_json(const compare::ComparisonResult& r, const compare::Finding& f,
                      nlohmann::json&);

std::string environment_text(const compare::ComparisonResult& r, const compare::Finding& f);
std::string environment_html(const compare::ComparisonResult& r, const compare::Finding& f);
void environment_json(const compare::ComparisonResult& r, const compare::Finding& f,
                      nlohmann::json&);

std::string loader_workers_text(const compare::ComparisonResult& r, const compare::Finding& f);
void loader_workers_json(const compare::ComparisonResult& r, const compare::Finding& f,
                         nlohmann::json&);

std::string warnings_text(const compare::ComparisonResult& r, const compare::Finding& f);
std::string warnings_html(const compare::ComparisonResult& r, const compare::Finding& f);
void warnings_json(const compare::ComparisonResult& r, const compare::Finding& f, nlohmann::json&);

std::string step_launches_text(const compare::ComparisonResult& r, const compare::Finding& f);
void step_launches_json(const compare::ComparisonResult& r, const compare::Finding& f,
                        nlohmann::json&);
// The step launches' column of the HTML cost table: its header and run `run`'s cell ("" each
// when no run asked for CUDA graphs).
std::string step_launches_header(const compare::ComparisonResult& r);
std::string step_launches_cell(const compare::ComparisonResult& r, std::size_t run);

}  // namespace ra::report
