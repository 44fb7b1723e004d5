// The HTML report (report/html_report.h): sections in the order a reader needs them, each a
// function returning its HTML, or "" when it has nothing to show.
#include "report/html_report.h"

#include <algorithm>
#include <cstdint>

#include "compare/verdict.h"
#include "report/finding_forms.h"
#include "report/html_sections.h"
#include "report/sections.h"
#include "report/svg_plot.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report {
namespace {

using compare::ComparisonResult;
using svg::html_escaped;
using text::format;

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1000px; margin: 24px auto; padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.banner { padding: 12px 16px; border-radius: 6px; font-weight: 600; font-size: 16px; }
.banner.ok { background: #e3f4e1; border: 1px solid #59a14f; }
.banner.allowed { background: #fdf3d8; border: 1px solid #edc948; }
.banner.diverged { background: #fbe1e1; border: 1px solid #e15759; }
.banner.none { background: #eee; border: 1px solid #aaa; }
.banner small { display: block; font-weight: 400; font-size: 13px; margin-top: 4px; }
.warning { color: #9c2b2b; }
p.finding { font-weight: 600; }
table { border-collapse: collapse; margin: 4px 0; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #ddd; }
td.differs { color: #b02a2a; font-weight: 600; } td.same { color: #2d6a2d; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; white-space: pre-wrap; font-size: 12px; }
svg.plot { display: block; margin: 8px 0 16px; max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .title { font-size: 13px; font-weight: 600; }
svg .series { stroke-width: 1.4; } svg .marker { stroke: #e15759; stroke-dasharray: 4 3; }
svg .marker-label { fill: #e15759; } svg .cell-off { fill: #f0f0f0; }
p.caption { color: #555; font-size: 13px; margin: 2px 0 12px; }
@media print { body { margin: 0; max-width: none; } .banner { border-width: 2px; } }
)";

std::string cell(const std::string& content, const std::string& cls = "") {
  return "<td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + content + "</td>";
}

std::string banner(const ComparisonResult& r) {
  const std::string verdict = text::verdict(r);
  const std::string head = verdict.substr(0, verdict.find('\n'));
  // The banner's colour is the verdict's status (compare/verdict.h), as the exit code is.
  const compare::AuditStatus status = compare::audit_verdict(r).status;
  const bool none = status != compare::AuditStatus::passed || r.nothing_compared() ||
                    r.identity.compared_runs.size() < 2;
  const std::string cls = status == compare::AuditStatus::diverged ? "diverged"
                          : none                                   ? "none"
                          : r.identity.identical                   ? "ok"
                                                                   : "allowed";
  std::string out = "<div class=\"banner " + cls + "\">" + html_escaped(head) + "<small>" +
                    (r.identity.expect_identical ? "bitwise identity was expected"
                                                 : "bitwise identity was not expected") +
                    "; " + html_escaped(text::mode_words(r)) + "</small></div>\n";
  out += findings_html(r, HtmlPlace::after_banner);
  std::string classes;
  for (const auto& c : r.identity.classes) classes += " {" + text::run_list(c) + "}";
  out += "<p>Outcome classes (runs with bitwise identical outcomes):" + html_escaped(classes) +
         "</p>\n";
  // Where the runs came from: missing runs, unfinished shards, foreign files, never hidden.
  if (const std::string folders = text::audit_folders(r); !folders.empty()) {
    out += "<pre>" + svg::html_lines_escaped(folders) + "</pre>\n";
  }
  return out;
}

std::string category_table(const ComparisonResult& r) {
  std::string out =
      "<h2>Per category</h2>\n<table><tr><th>category</th><th>same-seed runs</th><th>first "
      "divergence</th><th>tensor</th><th>runs differing</th><th>steps differing</th></tr>\n";
  for (const compare::CategoryVerdict& v : r.categories) {
    out += "<tr>" + cell(html_escaped(text::category_title(v.category)));
    out += v.identical ? cell("identical", "same") : cell("differ", "differs");
    if (v.first) {
      out += cell(html_escaped(text::where(*v.first))) +
             cell(html_escaped(v.first->per_category ? text::divergence_tensor(*v.first)
                                                     : v.first->tensor)) +
             cell(html_escaped(text::run_list(v.first->runs_differing)));
    } else {
      out += cell("") + cell("") + cell("");
    }
    out += cell(std::to_string(v.steps_differing)) + "</tr>\n";
  }
  out += "</table>\n";
  const std::string first =
      text::cut_long_lines(text::first_divergence(r) + text::root_cause(r) +
                           findings_html(r, HtmlPlace::divergence_block) + text::next_step(r));
  if (!first.empty()) out += "<pre>" + svg::html_lines_escaped(first) + "</pre>\n";
  return out;
}

std::string ulp_cell(const compare::TensorDifference& d) {
  if (d.max_ulp_same_sign == UINT64_MAX) return "a NaN against another value";
  if (d.differing > 0 && d.max_ulp_same_sign == 0) return "(every difference is a sign flip)";
  return std::to_string(d.max_ulp_same_sign);
}

std::string difference_cells(const compare::TensorDifference& d) {
  return cell(std::to_string(d.differing)) + cell(std::to_string(d.sign_flips)) +
         cell(format("%.3g", d.max_abs)) + cell(format("%.3g", d.max_relative)) + cell(ulp_cell(d));
}

// The weight snapshots' differences: per point, all tensors, then each tensor that differs.
std::string snapshots(const ComparisonResult& r) {
  if (r.snapshots.empty()) return "";
  std::string out =
      "<h2>Weight differences (snapshots)</h2>\n<table><tr><th>point</th><th>tensor</th><th>"
      "elements differing</th><th>sign flips</th><th>max |difference|</th><th>relative</th><th>"
      "max ULP, same sign</th></tr>\n";
  for (const compare::SnapshotDivergence& s : r.snapshots) {
    out += "<tr>" + cell(html_escaped(s.point)) + cell(format("all %zu", s.tensors.size())) +
           difference_cells(s.total) + "</tr>\n";
    for (const compare::TensorDivergence& t : s.tensors) {
      if (t.difference.differing == 0) continue;
      out += "<tr>" + cell("") + cell(html_escaped(t.tensor)) + difference_cells(t.difference) +
             "</tr>\n";
    }
  }
  return out +
         "</table>\n<p class=\"caption\">Worst over the same-seed runs against the reference "
         "run. Sign flips: elements positive in one run and negative in the other (a zero is "
         "neither). ULP distances are over the other differing elements: across zero an ULP "
         "distance counts every float between (about 2&times;10<sup>9</sup> for 0.001 against "
         "&minus;0.001), true but of no use. Relative: the largest |difference| divided by the "
         "tensor's largest |value|.</p>\n";
}

std::string statistics(const ComparisonResult& r) {
  if (r.seed_groups.groups.empty()) return "";
  std::string out =
      "<h2>Outcome statistics</h2>\n<table><tr><th>seed group</th><th>runs</th><th>final loss "
      "mean</th><th>std</th><th>min</th><th>max</th><th>eval accuracy mean</th></tr>\n";
  for (const compare::GroupStatistics& g : r.seed_groups.groups) {
    out += "<tr>" + cell(html_escaped(g.group)) + cell(std::to_string(g.final_loss.n)) +
           cell(format("%.6g", g.final_loss.mean)) + cell(format("%.3g", g.final_loss.std)) +
           cell(format("%.6g", g.final_loss.min)) + cell(format("%.6g", g.final_loss.max)) +
           cell(g.eval_accuracy.n > 0 ? format("%.4f", g.eval_accuracy.mean) : "") + "</tr>\n";
  }
  return out + "</table>\n";
}

std::string cost(const ComparisonResult& r) {
  std::string out =
      "<h2>Cost per step</h2>\n<table><tr><th>run</th><th>seed group</th><th>steps</th><th>median "
      "step</th><th>recording</th><th>wall time</th>" +
      step_launches_header(r) + "</tr>\n";  // report/step_launches_section.cpp
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const compare::RunSummary& s = r.runs[i];
    out += "<tr>" + cell(std::to_string(s.run)) + cell(html_escaped(s.seed_group)) +
           cell(std::to_string(s.steps)) + cell(format("%.3f ms", s.median_step_seconds * 1e3)) +
           cell(format("%.2f%% %s", s.recording_fraction * 100,
                       s.recording_measured ? "measured" : "summed")) +
           cell(format("%.2f s", s.total_seconds)) + step_launches_cell(r, i) + "</tr>\n";
  }
  // A figure over 100 % reads as an error unless the page says what it is the share of.
  return out +
         "</table>\n<p class=\"caption\">recording: the time the recorder spent digesting what "
         "each step recorded (XXH3-128 of the batch, every gradient, weight and optimizer state, "
         "and the op records with --trace-ops), divided by the time the training steps took "
         "(median step &times; steps). It can exceed 100%: on a GPU a step takes about a "
         "millisecond, while digesting every tensor it touched (by a kernel on the device, or "
         "on the host after a copy) can take longer than the step itself. That is the figure "
         "marked summed (traces of PyTorch scripts, older traces); one marked measured is what "
         "recording added to a step: the run's median step, start to start (the step, the "
         "recorder, the loader), against the median of a few steps the audit trained with "
         "recording off.</p>\n";
}

}  // namespace

const char* html::page_style() {
  return kStyle;
}

std::string render_html(const ComparisonResult& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>repro-audit: " + html_escaped(r.subject.spec_name) + "</title>\n";
  out += "<style>" + std::string(html::page_style()) + "</style>\n</head>\n<body>\n";
  out += "<h1>repro-audit: " + html_escaped(r.subject.spec_name) +
         (", " + text::runs_count(r.runs.size())) + "</h1>\n";
  out += banner(r) + category_table(r);
  out += findings_html(r, HtmlPlace::findings);
  out += html::loss_plots(r) + html::growth_plots(r) + html::divergence_map(r) +
         html::seed_group_plots(r) + findings_html(r, HtmlPlace::after_seed_group_plots) +
         snapshots(r) + statistics(r) + findings_html(r, HtmlPlace::after_statistics) + cost(r);
  return out + "</body>\n</html>\n";
}

}  // namespace ra::report
