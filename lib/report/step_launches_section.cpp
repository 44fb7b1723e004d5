// The step-launches section (report/sections.h): the step-launches finding
// (compare/step_launches_finding.cpp) in every form: in words after the cost, the launches summed
// over the runs that asked for CUDA graphs and why the eager steps were eager (docs/report.md,
// "Cost"); in the HTML page a column of the cost table, a run's launches with the eager steps'
// reasons as the cell's title; no JUnit case (it decides nothing); in the JSON report each such
// run's "step_launch".
#include <algorithm>

#include "compare/finding_facts.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"
#include "trace/trace_io.h"

namespace ra::report {

std::string step_launches_text(const compare::ComparisonResult& r, const compare::Finding&) {
  const compare::StepLaunches* launches = compare::step_launches_of(r);
  if (launches == nullptr) return "";
  const trace::StepLaunchRecord& sum = launches->sum;
  const auto asked =
      static_cast<std::size_t>(std::count_if(launches->runs.begin(), launches->runs.end(),
                                             [](const auto& run) { return run.has_value(); }));
  std::string out = text::format(
      "steps as CUDA graphs (--cuda-graphs on, %zu of %zu runs): %lld replayed, %lld captured, "
      "%lld eager\n",
      asked, r.runs.size(), static_cast<long long>(sum.replay), static_cast<long long>(sum.capture),
      static_cast<long long>(sum.eager));
  for (const auto& [reason, count] : sum.eager_reasons) {
    out += text::format("  eager: %lld step%s, %s\n", static_cast<long long>(count),
                        count == 1 ? "" : "s", reason.c_str());
  }
  return out;
}

std::string step_launches_header(const compare::ComparisonResult& r) {
  return compare::step_launches_of(r) == nullptr ? "" : "<th>steps as CUDA graphs</th>";
}

std::string step_launches_cell(const compare::ComparisonResult& r, std::size_t run) {
  const compare::StepLaunches* launches = compare::step_launches_of(r);
  if (launches == nullptr) return "";
  if (run >= launches->runs.size() || !launches->runs[run]) return "<td>graphs off</td>";
  const trace::StepLaunchRecord& l = *launches->runs[run];
  std::string reasons;
  for (const auto& [reason, count] : l.eager_reasons) {
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(count) + " eager: " + reason;
  }
  return "<td title=\"" + svg::html_escaped(reasons) + "\">" +
         text::format("%lld replayed, %lld captured, %lld eager", static_cast<long long>(l.replay),
                      static_cast<long long>(l.capture), static_cast<long long>(l.eager)) +
         "</td>";
}

void step_launches_json(const compare::ComparisonResult& r, const compare::Finding&,
                        nlohmann::json& report) {
  const compare::StepLaunches* launches = compare::step_launches_of(r);
  if (launches == nullptr) return;
  for (std::size_t i = 0; i < launches->runs.size() && i < report["runs"].size(); ++i) {
    if (launches->runs[i])
      report["runs"][i]["step_launch"] = trace::step_launch_json(*launches->runs[i]);
  }
}

}  // namespace ra::report
