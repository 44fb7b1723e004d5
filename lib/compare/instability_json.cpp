// The instability finding in the JSON report ("instability", docs/report.md):
// compare/instability.h.
#include <cmath>
#include <cstdio>

#include "compare/instability.h"

namespace ra::compare {
namespace {

using nlohmann::json;

// +infinity (s/0) has no JSON number: null, as the text says "inf".
json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json estimate_json(const std::optional<RatioEstimate>& r) {
  if (!r) return nullptr;
  return {{"ratio", number(r->ratio)}, {"low", number(r->low)},
          {"high", number(r->high)},   {"confidence", r->confidence},
          {"resamples", r->resamples}, {"trustworthy", r->trustworthy},
          {"warning", r->warning}};
}

std::string bits_text(std::uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

}  // namespace

json instability_json(const InstabilityFindings& f) {
  json perturbed = json::array();
  for (const PerturbedRunCheck& c : f.perturbed) {
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
  for (const MetricFinding& m : f.metrics) {
    json groups = json::object();
    for (const MetricSpread& g : m.groups) {
      groups[g.group] = {{"runs", g.runs}, {"mean", g.mean}, {"spread", g.spread}};
    }
    metrics.push_back({{"metric", m.metric},
                       {"groups", groups},
                       {"same_over_different", estimate_json(m.same_over_different)},
                       {"perturbed_over_different", estimate_json(m.perturbed_over_different)},
                       {"same_over_perturbed", estimate_json(m.same_over_perturbed)},
                       {"verdict", to_string(m.verdict)},
                       {"threshold", kAmplificationThreshold},
                       {"interpretation", m.interpretation}});
  }
  return {{"reference_run", f.reference},
          {"perturbed_runs", perturbed},
          {"metrics", metrics},
          {"notes", f.notes}};
}

}  // namespace ra::compare
