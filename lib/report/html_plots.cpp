// The plots of the HTML report (report/html_sections.h): losses and their distance from the
// reference run (every run up to kMaxCurves, above that the reference, the first runs to part
// from it and the spread of all), growth per epoch, the map of differing digests, seed groups.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "report/html_sections.h"
#include "report/text_format.h"

namespace ra::report::html {
namespace {

using compare::ComparisonResult;
using svg::html_escaped;
using text::format;

// The runs drawn as curves, in report indices, each with its palette colour and legend label.
struct Curve {
  std::size_t run = 0;
  int colour = 0;
  std::string label;
};
struct Curves {
  std::vector<Curve> curves;
  bool every_run = true;  // false: the rest are only in the band
};

std::size_t reference_of(const ComparisonResult& r) {
  return r.identity.compared_runs.empty() ? 0 : std::size_t(r.identity.compared_runs[0]);
}

std::string run_label(const ComparisonResult& r, std::size_t i) {
  return "run " + std::to_string(r.runs[i].run) +
         (i == reference_of(r) && !r.identity.compared_runs.empty() ? " (reference)" : "");
}

// The compared runs whose loss differs from the reference run's, by the first step where its
// bits differ, earliest first (ties: report order): (step, run).
std::vector<std::pair<std::size_t, std::size_t>> parting_runs(const ComparisonResult& r) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto& losses = r.growth.steps.losses;
  const std::size_t ref = reference_of(r);
  for (std::size_t c = 1; c < r.identity.compared_runs.size(); ++c) {
    const std::size_t i = std::size_t(r.identity.compared_runs[c]);
    const std::size_t steps = std::min(losses[i].size(), losses[ref].size());
    for (std::size_t k = 0; k < steps; ++k) {
      if (std::bit_cast<std::uint32_t>(losses[i][k]) !=
          std::bit_cast<std::uint32_t>(losses[ref][k])) {
        out.emplace_back(k, i);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Curves curves_of(const ComparisonResult& r) {
  Curves out;
  const std::size_t runs = r.growth.steps.losses.size();
  if (runs <= kMaxCurves) {
    for (std::size_t i = 0; i < runs; ++i) out.curves.push_back({i, int(i), run_label(r, i)});
    return out;
  }
  out.every_run = false;
  out.curves.push_back({reference_of(r), 0, run_label(r, reference_of(r))});
  for (const auto& [step, i] : parting_runs(r)) {
    if (out.curves.size() > kFirstDivergentShown) break;
    out.curves.push_back({i, int(out.curves.size()),
                          run_label(r, i) + " (parts at step " + std::to_string(step) + ")"});
  }
  return out;
}

// Per step, the least and the greatest of value(run, step) over `runs`, over the steps of each;
// a NaN value is left out, and a step with nothing else is a gap in the band.
template <typename Value>
svg::Band spread(const std::vector<std::size_t>& runs,
                 const std::vector<std::vector<float>>& losses, const std::string& label,
                 Value value) {
  svg::Band band{label, {}, {}, {}};
  for (std::size_t k = 0;; ++k) {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    bool any = false;
    for (std::size_t i : runs) {
      if (k >= losses[i].size()) continue;
      any = true;
      const double v = value(i, k);
      if (std::isnan(v)) continue;
      low = std::min(low, v), high = std::max(high, v);
    }
    if (!any) return band;
    if (low > high) low = high = std::nan("");  // only NaN at this step
    band.x.push_back(double(k)), band.low.push_back(low), band.high.push_back(high);
  }
}

svg::Series series_of(const Curve& c, const std::vector<float>& values,
                      const std::vector<float>* reference) {
  svg::Series s{c.label, {}, {}, c.colour};
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (reference && k >= reference->size()) break;
    s.x.push_back(double(k));
    s.y.push_back(reference ? std::abs(double(values[k]) - double((*reference)[k]))
                            : double(values[k]));
  }
  return s;
}

std::string band_note(const ComparisonResult& r, const Curves& curves) {
  if (curves.every_run) return "";
  const std::size_t parting = curves.curves.size() - 1;
  return format("<p>%zu runs are too many curves to tell apart: the plots draw the reference run, ",
                r.growth.steps.losses.size()) +
         (parting > 0 ? format("the %zu compared run%s whose loss parts from it first, ", parting,
                               parting == 1 ? "" : "s")
                      : std::string("(no compared run's loss parts from it) ")) +
         "and a grey band from the lowest to the highest value of all runs at each step (the JSON "
         "report has every run's figures).</p>\n";
}

// Each same-seed run's |loss - the reference's loss| per step (log scale): every compared run, or
// above kMaxCurves runs the first to part and the band of all compared runs.
std::string distance_plot(const ComparisonResult& r, const Curves& curves) {
  svg::LinePlot gap{.title =
                        "|loss - reference run's loss| per step, same-seed runs (points where "
                        "they are equal are left out)",
                    .x_label = "step",
                    .y_label = "|loss difference| (log scale)",
                    .log_y = true};
  const auto& losses = r.growth.steps.losses;
  const std::vector<float>& ref = losses[reference_of(r)];
  for (const Curve& c : curves.curves) {
    if (c.run == reference_of(r)) continue;
    const bool compared =
        std::find(r.identity.compared_runs.begin(), r.identity.compared_runs.end(), int(c.run)) !=
        r.identity.compared_runs.end();
    if (compared) gap.series.push_back(series_of(c, losses[c.run], &ref));
  }
  if (!curves.every_run) {
    std::vector<std::size_t> others;
    for (std::size_t c = 1; c < r.identity.compared_runs.size(); ++c)
      others.push_back(r.identity.compared_runs[c]);
    // Over the runs that differ there: a log axis cannot show the runs that do not (distance 0).
    gap.band = spread(
        others, losses,
        format("min..max over all %zu same-seed runs, where they differ", others.size()),
        [&](std::size_t i, std::size_t k) {
          const double d = k < ref.size() ? std::abs(double(losses[i][k]) - double(ref[k])) : 0.0;
          return d > 0 ? d : std::nan("");
        });
  }
  if (r.first_divergence && r.first_divergence->step) {
    gap.marker_x = double(*r.first_divergence->step);
    gap.marker_label = "first divergence (step " + std::to_string(*r.first_divergence->step) + ")";
  }
  return svg::line_plot(gap);
}

}  // namespace

std::string loss_plots(const ComparisonResult& r) {
  const Curves curves = curves_of(r);
  const auto& losses = r.growth.steps.losses;
  svg::LinePlot plot{curves.every_run ? "Training loss per step, every run"
                                      : "Training loss per step: the reference run, the first runs "
                                        "to part from it, the spread of all runs",
                     "step", "loss", false};
  for (const Curve& c : curves.curves) plot.series.push_back(series_of(c, losses[c.run], nullptr));
  if (!curves.every_run) {
    std::vector<std::size_t> all(losses.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    plot.band = spread(all, losses, format("min..max over all %zu runs", all.size()),
                       [&](std::size_t i, std::size_t k) { return double(losses[i][k]); });
  }
  std::string out = "<h2>Plots</h2>\n" + band_note(r, curves) + svg::line_plot(plot);
  if (r.identity.compared_runs.size() < 2) return out;
  // A comparison that holds no loss series for a compared run (one built from findings alone,
  // such as a data-parallel check's) has no distance to draw from it.
  const bool every_series =
      std::all_of(r.identity.compared_runs.begin(), r.identity.compared_runs.end(),
                  [&](int run) { return run >= 0 && std::size_t(run) < losses.size(); });
  if (!every_series) return out;
  if (r.identity.identical)
    return out + "<p>The same-seed runs' losses are bitwise identical: no distance to plot.</p>\n";
  return out + distance_plot(r, curves);
}

std::string growth_plots(const ComparisonResult& r) {
  if (r.growth.epochs.empty() || r.identity.identical)
    return "";  // nothing grows between identical runs
  // One epoch would be one dot on an empty axis: say so in a line instead.
  if (r.growth.epochs.size() < 2) {
    return "<p>Growth per epoch is plotted from two epochs on; this audit has one (its figures "
           "are in the text and JSON reports).</p>\n";
  }
  svg::LinePlot ulp{"Divergence growth per epoch: max ULP distance of the loss", "epoch",
                    "max loss ULP (log scale)", true};
  svg::LinePlot params{"Parameters whose digest differs at the epoch's end", "epoch",
                       "parameters differing", false};
  svg::LinePlot weights{"Max |weight difference| at the epoch's end (snapshots)", "epoch",
                        "max |difference| (log scale)", true};
  svg::Series u{"max ULP", {}, {}}, p{"parameters", {}, {}}, w{"max |dw|", {}, {}};
  for (const compare::EpochGrowth& g : r.growth.epochs) {
    const double epoch = double(g.epoch + 1);
    u.x.push_back(epoch);
    u.y.push_back(double(g.max_loss_ulp));
    if (g.weights_differing) {  // none: the epoch's last step held one digest per category
      p.x.push_back(epoch);
      p.y.push_back(*g.weights_differing);
    }
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
  if (r.growth.steps.rows.empty() || r.growth.steps.rows[0].differs.empty()) return "";
  svg::CellMap map{"Where digests differ from the reference run (rows in causal order)",
                   "step",
                   {},
                   {},
                   0,
                   "differs in some same-seed run",
                   "identical"};
  for (const auto& row : r.growth.steps.rows) {
    map.rows.push_back(text::category_title(row.category) + ": " + row.tensor);
    map.cells.push_back(row.differs);
  }
  return svg::cell_map(map);
}

std::string seed_group_plots(const ComparisonResult& r) {
  if (r.seed_groups.groups.size() < 2) return "";
  svg::StripPlot loss{"Final loss per run, by seed group", "final training loss", {}};
  svg::StripPlot accuracy{"Evaluation accuracy per run, by seed group", "accuracy", {}};
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const compare::RunSummary& s : r.runs) {
    groups[s.seed_group].first.push_back(s.final_loss);
    if (s.eval_accuracy) groups[s.seed_group].second.push_back(*s.eval_accuracy);
  }
  for (const auto& [name, values] : groups) {
    const std::string label = name == "perturbed" ? "perturbed (1 bit)" : name + " seeds";
    loss.groups.push_back({label, values.first});
    if (!values.second.empty()) accuracy.groups.push_back({label, values.second});
  }
  std::string out = svg::strip_plot(loss);
  if (!accuracy.groups.empty()) out += svg::strip_plot(accuracy);
  for (const auto& [what, ratio] : {std::pair{"final loss", r.seed_groups.loss_std_ratio},
                                    std::pair{"accuracy", r.seed_groups.accuracy_std_ratio}}) {
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

}  // namespace ra::report::html
