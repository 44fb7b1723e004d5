// The instability section (report/sections.h): the instability finding
// (compare/instability_finding.cpp; --seeds all, docs/statistics.md) in every form. In words,
// after the seed groups: where each perturbed run parts from the reference run, the three groups'
// spread per metric, the ratios with their bootstrap intervals, and the sentence that says what
// they mean; in the HTML page, after the seed groups' plots, a strip plot of the three groups per
// metric; in JUnit, properties "instability.<metric>.<what>" (it decides no case); in the JSON
// report, "instability" (docs/report.md).
#include <cmath>
#include <cstdio>

#include "compare/finding_facts.h"
#include "report/html_sections.h"
#include "report/markup.h"
#include "report/sections.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

using compare::MetricFinding;
using compare::RatioEstimate;

std::string ratio_cell(const std::optional<RatioEstimate>& e) {
  if (!e) return "-";
  if (std::isinf(e->ratio)) return "inf";
  if (e->resamples == 0) return format("%.3g", e->ratio);
  return format("%.3g [%.3g, %.3g]", e->ratio, e->low, e->high);
}

const char* spread_name(const MetricFinding& m) {
  return m.metric == "disagreement" ? "mean pairwise" : "std";
}

std::string perturbed_lines(const compare::InstabilityFindings& f) {
  std::string out;
  for (const compare::PerturbedRunCheck& c : f.perturbed) {
    const trace::Perturbation& p = c.perturbation;
    out += format("  perturbed run %d: %s[%lld] bit %d (0x%08x -> 0x%08x): ", c.run,
                  shown(p.tensor).c_str(), static_cast<long long>(p.element), p.bit, p.before,
                  p.after);
    out += c.parts_at_perturbation()
               ? format("parts from run %d at this weight, by design\n", f.reference)
               : format("NOT only there: %zu initial tensors differ from run %d's\n",
                        c.differing.size(), f.reference);
  }
  return out;
}

}  // namespace

std::string instability(const ComparisonResult& r) {
  const compare::InstabilityFindings* found = compare::instability_of(r);
  if (found == nullptr) return "";
  const compare::InstabilityFindings& f = *found;
  std::string out = "instability (perturbed group: the same seed, " + perturbed_kernels(r) +
                    ", one bit of one initial weight flipped per run):\n";
  out += perturbed_lines(f);
  out +=
      format("  %-14s %-14s %-12s %-12s %-12s %-24s %-24s %s\n", "metric", "spread", "same",
             "different", "perturbed", "same/different", "perturbed/different", "same/perturbed");
  for (const MetricFinding& m : f.metrics) {
    double spread[3] = {NAN, NAN, NAN};
    for (const compare::MetricSpread& g : m.groups) {
      const int i = g.group == "same" ? 0 : g.group == "different" ? 1 : 2;
      spread[i] = g.spread;
    }
    out += format(
        "  %-14s %-14s %-12.4g %-12.4g %-12.4g %-24s %-24s %s\n", m.metric.c_str(), spread_name(m),
        spread[0], spread[1], spread[2], ratio_cell(m.same_over_different).c_str(),
        ratio_cell(m.perturbed_over_different).c_str(), ratio_cell(m.same_over_perturbed).c_str());
  }
  for (const MetricFinding& m : f.metrics) out += "  finding: " + m.interpretation + "\n";
  for (const MetricFinding& m : f.metrics) {
    if (m.same_over_perturbed && !m.same_over_perturbed->trustworthy) {
      out += "  (" + shown(m.same_over_perturbed->warning) + ": read the intervals as rough)\n";
      break;
    }
  }
  for (const std::string& note : f.notes) out += "  note: " + shown(note) + "\n";
  return out;
}

}  // namespace ra::report::text

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
  const compare::InstabilityFindings* found = compare::instability_of(r);
  if (found == nullptr) return "";
  std::string out =
      "<h2>Does the nondeterminism matter?</h2>\n<p>The perturbed group: the same seed, " +
      text::perturbed_kernels(r) +
      ", one bit of one initial weight flipped per run (the instability floor). A same/perturbed "
      "ratio above " +
      text::format("%.3g", compare::kAmplificationThreshold) +
      " says a nondeterministic op amplifies differences; at or below, nondeterminism only "
      "triggers an instability the training already has.</p>\n";
  for (const compare::PerturbedRunCheck& c : found->perturbed) {
    if (c.parts_at_perturbation()) continue;
    out +=
        "<p class=\"warning\">perturbed run " + std::to_string(c.run) +
        ": its initial weights differ from the reference's in more than its flipped weight</p>\n";
  }
  for (const MetricFinding& m : found->metrics) out += metric_section(m);
  for (const std::string& note : found->notes) {
    out += "<p class=\"caption\">" + html_escaped(note) + "</p>\n";
  }
  return out;
}

}  // namespace ra::report::html

namespace ra::report {
namespace {

using nlohmann::json;

// +infinity (s/0) has no JSON number: null, as the text says "inf".
json finite_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json estimate_json(const std::optional<compare::RatioEstimate>& r) {
  if (!r) return nullptr;
  return {{"ratio", finite_or_null(r->ratio)},
          {"low", finite_or_null(r->low)},
          {"high", finite_or_null(r->high)},
          {"confidence", r->confidence},
          {"resamples", r->resamples},
          {"trustworthy", r->trustworthy},
          {"warning", r->warning}};
}

std::string bits_text(std::uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

// {"reference_run", "perturbed_runs": [...], "metrics": [...], "notes"}; an infinite ratio null.
json instability_document(const compare::InstabilityFindings& f) {
  json perturbed = json::array();
  for (const compare::PerturbedRunCheck& c : f.perturbed) {
    perturbed.push_back({{"run", c.run},
                         {"tensor", c.perturbation.tensor},
                         {"element", c.perturbation.element},
                         {"bit", c.perturbation.bit},
                         {"before_bits", bits_text(c.perturbation.before)},
                         {"after_bits", bits_text(c.perturbation.after)},
                         {"differing_initial_tensors", c.differing},
                         {"parts_at_perturbation", c.parts_at_perturbation()}});
  }
  json metrics = json::array();
  for (const compare::MetricFinding& m : f.metrics) {
    json groups = json::object();
    for (const compare::MetricSpread& g : m.groups) {
      groups[g.group] = {{"runs", g.runs}, {"mean", g.mean}, {"spread", g.spread}};
    }
    metrics.push_back({{"metric", m.metric},
                       {"groups", groups},
                       {"same_over_different", estimate_json(m.same_over_different)},
                       {"perturbed_over_different", estimate_json(m.perturbed_over_different)},
                       {"same_over_perturbed", estimate_json(m.same_over_perturbed)},
                       {"verdict", compare::to_string(m.verdict)},
                       {"threshold", compare::kAmplificationThreshold},
                       {"interpretation", m.interpretation}});
  }
  return {{"reference_run", f.reference},
          {"perturbed_runs", perturbed},
          {"metrics", metrics},
          {"notes", f.notes}};
}

std::string ratio_value(const std::optional<compare::RatioEstimate>& e) {
  if (!e) return "";
  if (std::isinf(e->ratio)) return "inf";
  if (e->resamples == 0) return text::format("%.4g", e->ratio);
  return text::format("%.4g [%.4g, %.4g]", e->ratio, e->low, e->high);
}

}  // namespace

std::string instability_text(const compare::ComparisonResult& r, const compare::Finding&) {
  return text::instability(r);
}

std::string instability_html(const compare::ComparisonResult& r, const compare::Finding&) {
  return html::instability_plots(r);
}

// With --seeds all, per metric: "instability.<metric>.<what>" (docs/statistics.md).
std::string instability_properties(const compare::ComparisonResult& r, const compare::Finding&) {
  const compare::InstabilityFindings* found = compare::instability_of(r);
  if (found == nullptr) return "";
  const compare::InstabilityFindings& f = *found;
  std::string out;
  for (const compare::MetricFinding& m : f.metrics) {
    const std::string key = "instability." + m.metric + ".";
    for (const compare::MetricSpread& g : m.groups) {
      out += junit_property(key + g.group + "_spread", text::format("%.6g", g.spread));
    }
    out += junit_property(key + "same_over_different", ratio_value(m.same_over_different));
    out +=
        junit_property(key + "perturbed_over_different", ratio_value(m.perturbed_over_different));
    out += junit_property(key + "same_over_perturbed", ratio_value(m.same_over_perturbed));
    out += junit_property(key + "verdict", compare::to_string(m.verdict));
    out += junit_property(key + "interpretation", m.interpretation);
  }
  return out;
}

// Only with a perturbed group (--seeds all).
void instability_json(const compare::ComparisonResult& r, const compare::Finding&,
                      nlohmann::json& report) {
  if (const compare::InstabilityFindings* found = compare::instability_of(r))
    report["instability"] = instability_document(*found);
}

}  // namespace ra::report
