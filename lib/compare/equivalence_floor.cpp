// The equivalence floor (compare/equivalence_floor.h).
#include "compare/equivalence_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "compare/statistics.h"
#include "core/error.h"

namespace ra::compare {
namespace {

// The spacing of floats at |x|: one unit in the last place of a loss of that size.
double ulp_of(float x) {
  const float m = std::fabs(x);
  return static_cast<double>(std::nextafter(m, std::numeric_limits<float>::infinity())) - m;
}

}  // namespace

EquivalenceRoles equivalence_roles(const std::vector<trace::Trace>& traces) {
  if (traces.size() < 3) {
    throw InputError(
        "--expect equivalent needs a floor, and none was given: name A's trace, B's, then runs "
        "of A that differ from it by rounding alone, such as A's perturbed run from `repro-audit "
        "exec --seeds all --runs 1 --allow-empty -- CMD_A` (docs/equivalence.md, \"The floor\"); " +
        std::to_string(traces.size()) + " trace(s) given");
  }
  EquivalenceRoles roles;
  const trace::Trace& a = traces[0];
  for (std::size_t i = 2; i < traces.size(); ++i) {
    const trace::Trace& t = traces[i];
    const trace::TraceHeader &h = t.header, &ha = a.header;
    if (!h.perturbation && h.spec_digest != ha.spec_digest) {
      throw InputError(t.source + " cannot be a floor run of A (" + a.source +
                       "): it is neither a perturbed run (--seeds all) nor a run of A's spec");
    }
    if (h.seed_init != ha.seed_init || h.seed_data != ha.seed_data ||
        h.seed_dropout != ha.seed_dropout) {
      throw InputError(t.source + " ran under other seeds than A (" + a.source +
                       "): a floor run differs from A by rounding alone, not by its seeds");
    }
    roles.floor_runs.push_back(static_cast<int>(i));
  }
  return roles;
}

EquivalenceCurve equivalence_curve(const std::vector<float>& a, const std::vector<float>& b,
                                   const std::vector<std::vector<float>>& floor_runs,
                                   double margin) {
  EquivalenceCurve c;
  c.margin = margin;
  std::size_t n = std::min(a.size(), b.size());
  for (const auto& f : floor_runs) n = std::min(n, f.size());
  double widest = 0.0;
  double worst_ratio = -1.0;
  for (std::size_t s = 0; s < n; ++s) {
    double measured = 0.0;
    for (const auto& f : floor_runs) {
      measured = std::max(measured, std::fabs(static_cast<double>(f[s]) - a[s]));
    }
    c.floor_seen = c.floor_seen || measured > 0.0;
    widest = std::max(widest, measured);
    const double floor = std::max(widest, ulp_of(a[s]));
    // A loss that is not finite on one side only is as far as can be; on both, no distance.
    const bool finite = std::isfinite(a[s]) && std::isfinite(b[s]);
    const double distance = finite ? std::fabs(static_cast<double>(b[s]) - a[s])
                            : std::isfinite(a[s]) != std::isfinite(b[s])
                                ? std::numeric_limits<double>::infinity()
                                : 0.0;
    c.steps.push_back(static_cast<std::int64_t>(s));
    c.loss_a.push_back(a[s]);
    c.loss_b.push_back(b[s]);
    c.distance.push_back(distance);
    c.measured_floor.push_back(measured);
    c.floor.push_back(floor);
    const double ratio = distance / floor;
    if (!c.beyond_from && ratio > margin) {
      c.beyond_from = s;
      c.ratio = ratio;
      c.ratio_at = s;
    }
    if (!c.beyond_from && ratio > worst_ratio) {
      worst_ratio = ratio;
      c.ratio = ratio;
      c.ratio_at = s;
    }
  }
  return c;
}

ParameterFloor parameter_floor(const std::vector<ParameterPoint>& points, double margin) {
  ParameterFloor out;
  std::vector<double> widest;  // per parameter, the floor's widest so far
  for (const ParameterPoint& p : points) {
    if (p.floor_runs.empty()) continue;
    const auto check = [&](const NamedTensors& t, const char* who) {
      if (t.size() != p.a.size()) {
        throw InputError("the snapshot after step " + std::to_string(p.step) + " of " + who +
                         " holds other parameters than A's");
      }
      for (std::size_t k = 0; k < t.size(); ++k) {
        if (t[k].first != p.a[k].first || t[k].second.shape() != p.a[k].second.shape()) {
          throw InputError("the snapshot after step " + std::to_string(p.step) + " of " + who +
                           ": " + t[k].first + " does not match A's " + p.a[k].first);
        }
      }
    };
    check(p.b, "B");
    for (const NamedTensors& f : p.floor_runs) check(f, "a floor run");
    widest.resize(p.a.size(), 0.0);
    out.steps.push_back(p.step);
    out.tensors = p.a.size();
    for (std::size_t k = 0; k < p.a.size(); ++k) {
      const Tensor& a = p.a[k].second;
      for (const NamedTensors& f : p.floor_runs) {
        widest[k] = std::max(widest[k], compare_tensors(a, f[k].second).max_abs);
      }
      float largest = 0.0f;
      for (std::size_t i = 0; i < a.size(); ++i)
        largest = std::max(largest, std::fabs(a.data()[i]));
      const ParameterCheck c{p.step, p.a[k].first, compare_tensors(a, p.b[k].second).max_abs,
                             std::max(widest[k], ulp_of(largest))};
      if (!out.beyond && c.ratio() > margin) out.beyond = c;
      if (!out.widest || c.ratio() > out.widest->ratio()) out.widest = c;
    }
  }
  return out;
}

}  // namespace ra::compare
