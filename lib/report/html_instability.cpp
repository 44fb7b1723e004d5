// The instability finding in the HTML report (--seeds all; docs/statistics.md): one strip plot of
// the three groups per metric, the ratios with their intervals, and the sentence.
#include <cmath>

#include "report/html_sections.h"
#include "report/text_format.h"

namespace ra::report::html {
namespace {

using compare::MetricFinding;
using compare::RatioEstimate;
using svg::html_escaped;

std::string ratio_text(const char* what, const std::optional<RatioEstimate>& e) {
  if (!e) return "";
  std::string out = std::string(what) + " " +
                    (std::isinf(e->ratio) ? std::string("inf") : text::format("%.3g", e->ratio));
  if (e->resamples > 0) {
    out += text::format(" [%.3g, %.3g]", e->low, e->high);
  }
  return out;
}

std::string metric_title(const MetricFinding& m) {
  if (m.metric == "final_loss") return "Final loss per run, by group";
  if (m.metric == "eval_accuracy") return "Evaluation accuracy per run, by group";
  return "Prediction disagreement per pair of runs, by group";
}

std::string metric_section(const MetricFinding& m) {
  svg::StripPlot plot{metric_title(m), m.metric == "disagreement" ? "disagreement" : m.metric, {}};
  for (const compare::MetricSpread& g : m.groups) {
    plot.groups.push_back(
        {g.group == "perturbed" ? "perturbed (1 bit)" : g.group + " seeds", g.values});
  }
  std::string out = svg::strip_plot(plot);
  out += "<p>" + html_escaped(ratio_text("same/different", m.same_over_different)) + "; " +
         html_escaped(ratio_text("perturbed/different", m.perturbed_over_different)) + "; " +
         html_escaped(ratio_text("same/perturbed", m.same_over_perturbed)) +
         " (95% bootstrap intervals)";
  if (m.same_over_perturbed && !m.same_over_perturbed->trustworthy) {
    out += " <span class=\"warning\">" + html_escaped(m.same_over_perturbed->warning) + "</span>";
  }
  out += "</p>\n<p class=\"finding\">" + html_escaped(m.interpretation) + "</p>\n";
  return out;
}

}  // namespace

std::string instability_plots(const compare::ComparisonResult& r) {
  if (!r.instability) return "";
  std::string out =
      "<h2>Does the nondeterminism matter?</h2>\n<p>The perturbed group: the same seed, " +
      text::perturbed_kernels(r) +
      ", one bit of one initial weight flipped per run (the instability floor). A same/perturbed "
      "ratio above " +
      text::format("%.3g", compare::kAmplificationThreshold) +
      " says a nondeterministic op amplifies differences; at or below, nondeterminism only "
      "triggers an instability the training already has.</p>\n";
  for (const compare::PerturbedRunCheck& c : r.instability->perturbed) {
    if (c.parts_at_perturbation()) continue;
    out +=
        "<p class=\"warning\">perturbed run " + std::to_string(c.run) +
        ": its initial weights differ from the reference's in more than its flipped weight</p>\n";
  }
  for (const MetricFinding& m : r.instability->metrics) out += metric_section(m);
  for (const std::string& note : r.instability->notes) {
    out += "<p class=\"caption\">" + html_escaped(note) + "</p>\n";
  }
  return out;
}

}  // namespace ra::report::html
