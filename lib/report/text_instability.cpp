// The instability finding in the text report (--seeds all; docs/statistics.md): where each
// perturbed run parts from the reference run, the three groups' spread per metric, the ratios
// with their bootstrap intervals, and the sentence that says what they mean.
#include <cmath>

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
  if (!r.instability) return "";
  const compare::InstabilityFindings& f = *r.instability;
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
