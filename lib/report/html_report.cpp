// The HTML report (report/html_report.h): sections in the order a reader needs them, each a
// function returning its HTML, or "" when it has nothing to show.
#include "report/html_report.h"

#include <cmath>
#include <map>

#include "report/svg_plot.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report {
namespace {

using audit::ComparisonResult;
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
table { border-collapse: collapse; margin: 4px 0; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #ddd; }
td.differs { color: #b02a2a; font-weight: 600; } td.same { color: #2d6a2d; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
svg.plot { display: block; margin: 8px 0 16px; max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .title { font-size: 13px; font-weight: 600; }
svg .grid { stroke: #e4e4e4; } svg .axes line { stroke: #555; }
svg .series { stroke-width: 1.4; } svg .marker { stroke: #e15759; stroke-dasharray: 4 3; }
svg .marker-label { fill: #e15759; } svg .cell-off { fill: #f0f0f0; }
@media print { body { margin: 0; max-width: none; } .banner { border-width: 2px; } }
)";

std::string cell(const std::string& content, const std::string& cls = "") {
  return "<td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + content + "</td>";
}

std::string banner(const ComparisonResult& r) {
  const std::string verdict = text::verdict(r);
  const std::string head = verdict.substr(0, verdict.find('\n'));
  const std::string cls = r.diverged()                                   ? "diverged"
                          : r.compared_runs.size() < 2 || r.incomplete() ? "none"
                          : r.identical                                  ? "ok"
                                                                         : "allowed";
  std::string out =
      "<div class=\"banner " + cls + "\">" + html_escaped(head) + "<small>" +
      (r.expect_identical ? "bitwise identity was expected" : "bitwise identity was not expected") +
      "; mode " + html_escaped(r.mode_summary) + "</small></div>\n";
  for (const std::string& w : r.warnings) {
    out += "<p class=\"warning\">WARNING: " + html_escaped(w) + "</p>\n";
  }
  std::string classes;
  for (const auto& c : r.classes) classes += " {" + text::run_list(c) + "}";
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
  for (const audit::CategoryVerdict& v : r.categories) {
    out += "<tr>" + cell(html_escaped(text::category_title(v.category)));
    out += v.identical ? cell("identical", "same") : cell("differ", "differs");
    if (v.first) {
      out += cell(html_escaped(text::where(*v.first))) + cell(html_escaped(v.first->tensor)) +
             cell(html_escaped(text::run_list(v.first->runs_differing)));
    } else {
      out += cell("") + cell("") + cell("");
    }
    out += cell(std::to_string(v.steps_differing)) + "</tr>\n";
  }
  out += "</table>\n";
  const std::string first = text::cut_long_lines(text::first_divergence(r) + text::root_cause(r));
  if (!first.empty()) out += "<pre>" + svg::html_lines_escaped(first) + "</pre>\n";
  return out;
}

std::string run_label(const ComparisonResult& r, std::size_t i) {
  const bool reference = !r.compared_runs.empty() && r.compared_runs[0] == int(i);
  return "run " + std::to_string(r.runs[i].run) + (reference ? " (reference)" : "");
}

std::string loss_plots(const ComparisonResult& r) {
  svg::LinePlot losses{"Training loss per step, every run", "step", "loss", false};
  const auto& series = r.series.losses;
  for (std::size_t i = 0; i < series.size(); ++i) {
    svg::Series s{run_label(r, i), {}, {}};
    for (std::size_t k = 0; k < series[i].size(); ++k) {
      s.x.push_back(double(k));
      s.y.push_back(series[i][k]);
    }
    losses.series.push_back(std::move(s));
  }
  std::string out = "<h2>Plots</h2>\n" + svg::line_plot(losses);
  if (r.compared_runs.size() < 2) return out;
  if (r.identical)
    return out + "<p>The same-seed runs' losses are bitwise identical: no distance to plot.</p>\n";
  svg::LinePlot gap{
      "|loss - reference run's loss| per step, same-seed runs (points where they "
      "are equal are left out)",
      "step", "|loss difference| (log scale)", true};
  const std::vector<float>& ref = series[std::size_t(r.compared_runs[0])];
  for (std::size_t c = 1; c < r.compared_runs.size(); ++c) {
    const std::size_t i = std::size_t(r.compared_runs[c]);
    svg::Series s{run_label(r, i), {}, {}};
    for (std::size_t k = 0; k < series[i].size() && k < ref.size(); ++k) {
      s.x.push_back(double(k));
      s.y.push_back(std::abs(double(series[i][k]) - double(ref[k])));
    }
    gap.series.push_back(std::move(s));
  }
  if (r.first_divergence && r.first_divergence->step) {
    gap.marker_x = double(*r.first_divergence->step);
    gap.marker_label = "first divergence (step " + std::to_string(*r.first_divergence->step) + ")";
  }
  return out + svg::line_plot(gap);
}

std::string growth_plots(const ComparisonResult& r) {
  if (r.growth.empty() || r.identical) return "";  // nothing grows between identical runs
  svg::LinePlot ulp{"Divergence growth per epoch: max ULP distance of the loss", "epoch",
                    "max loss ULP (log scale)", true};
  svg::LinePlot params{"Parameters whose digest differs at the epoch's end", "epoch",
                       "parameters differing", false};
  svg::LinePlot weights{"Max |weight difference| at the epoch's end (snapshots)", "epoch",
                        "max |difference| (log scale)", true};
  svg::Series u{"max ULP", {}, {}}, p{"parameters", {}, {}}, w{"max |dw|", {}, {}};
  for (const audit::EpochGrowth& g : r.growth) {
    const double epoch = double(g.epoch + 1);
    u.x.push_back(epoch);
    u.y.push_back(double(g.max_loss_ulp));
    p.x.push_back(epoch);
    p.y.push_back(g.weights_differing);
    if (g.snapshot) {
      w.x.push_back(epoch);
      w.y.push_back(g.snapshot->max_abs);
    }
  }
  ulp.series.push_back(std::move(u));
  params.series.push_back(std::move(p));
  ulp.height = params.height = weights.height = 220;
  ulp.integer_x = params.integer_x = weights.integer_x = params.integer_y = true;
  std::string out = svg::line_plot(ulp) + svg::line_plot(params);
  if (!w.x.empty()) {
    weights.series.push_back(std::move(w));
    out += svg::line_plot(weights);
  }
  return out;
}

std::string divergence_map(const ComparisonResult& r) {
  if (r.series.rows.empty() || r.series.rows[0].differs.empty()) return "";
  svg::CellMap map{"Where digests differ from the reference run (rows in causal order)",
                   "step",
                   {},
                   {},
                   0,
                   "differs in some same-seed run",
                   "identical"};
  for (const auto& row : r.series.rows) {
    map.rows.push_back(text::category_title(row.category) + ": " + row.tensor);
    map.cells.push_back(row.differs);
  }
  return svg::cell_map(map);
}

std::string seed_group_plots(const ComparisonResult& r) {
  if (r.statistics.size() < 2) return "";
  svg::StripPlot loss{"Final loss per run, by seed group", "final training loss", {}};
  svg::StripPlot accuracy{"Evaluation accuracy per run, by seed group", "accuracy", {}};
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const audit::RunSummary& s : r.runs) {
    groups[s.seed_group].first.push_back(s.final_loss);
    if (s.eval_accuracy) groups[s.seed_group].second.push_back(*s.eval_accuracy);
  }
  for (const auto& [name, values] : groups) {
    loss.groups.push_back({name + " seeds", values.first});
    if (!values.second.empty()) accuracy.groups.push_back({name + " seeds", values.second});
  }
  std::string out = svg::strip_plot(loss);
  if (!accuracy.groups.empty()) out += svg::strip_plot(accuracy);
  for (const auto& [what, ratio] :
       {std::pair{"final loss", r.loss_std_ratio}, std::pair{"accuracy", r.accuracy_std_ratio}}) {
    if (!ratio) continue;
    out += "<p>std(same seeds) / std(different seeds) of the " + std::string(what) + ": " +
           format("%.3g, %.0f%% bootstrap interval [%.3g, %.3g]", ratio->ratio,
                  ratio->confidence * 100, ratio->low, ratio->high) +
           (ratio->trustworthy
                ? ""
                : " <span class=\"warning\">" + html_escaped(ratio->warning) + "</span>") +
           "</p>\n";
  }
  return out;
}

std::string statistics(const ComparisonResult& r) {
  if (r.statistics.empty()) return "";
  std::string out =
      "<h2>Outcome statistics</h2>\n<table><tr><th>seed group</th><th>runs</th><th>final loss "
      "mean</th><th>std</th><th>min</th><th>max</th><th>eval accuracy mean</th></tr>\n";
  for (const audit::GroupStatistics& g : r.statistics) {
    out += "<tr>" + cell(html_escaped(g.group)) + cell(std::to_string(g.final_loss.n)) +
           cell(format("%.6g", g.final_loss.mean)) + cell(format("%.3g", g.final_loss.std)) +
           cell(format("%.6g", g.final_loss.min)) + cell(format("%.6g", g.final_loss.max)) +
           cell(g.eval_accuracy.n > 0 ? format("%.4f", g.eval_accuracy.mean) : "") + "</tr>\n";
  }
  return out + "</table>\n";
}

std::string differences(const ComparisonResult& r) {
  if (r.environment_differences.empty() && r.ledger_differences.empty()) return "";
  std::string out = "<h2>Environment and algorithm ledger differences</h2>\n<ul>\n";
  for (const std::string& d : r.environment_differences) {
    out += "<li>" + html_escaped(d) + "</li>\n";
  }
  for (const audit::LedgerDifference& d : r.ledger_differences) {
    out += "<li>" + html_escaped(text::ledger_difference_text(d)) + "</li>\n";
  }
  return out + "</ul>\n";
}

std::string cost(const ComparisonResult& r) {
  std::string out =
      "<h2>Cost per step</h2>\n<table><tr><th>run</th><th>seed group</th><th>steps</th><th>median "
      "step</th><th>recording</th><th>wall time</th></tr>\n";
  for (const audit::RunSummary& s : r.runs) {
    out += "<tr>" + cell(std::to_string(s.run)) + cell(html_escaped(s.seed_group)) +
           cell(std::to_string(s.steps)) + cell(format("%.3f ms", s.median_step_seconds * 1e3)) +
           cell(format("%.2f%%", s.recording_fraction * 100)) +
           cell(format("%.2f s", s.total_seconds)) + "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string render_html(const ComparisonResult& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>repro-audit: " + html_escaped(r.spec_name) + "</title>\n";
  out += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>repro-audit: " + html_escaped(r.spec_name) + format(", %zu runs", r.runs.size()) +
         "</h1>\n";
  out += banner(r) + category_table(r) + loss_plots(r) + growth_plots(r) + divergence_map(r) +
         seed_group_plots(r) + statistics(r) + differences(r) + cost(r);
  return out + "</body>\n</html>\n";
}

}  // namespace ra::report
