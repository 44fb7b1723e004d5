// The equivalence of two programs against the floor, as a finding (compare/checks.h;
// compare/equivalence_floor.h; docs/equivalence.md, "The floor"): within the floor through the
// last common step passes; beyond it from some step fails (exit 1); a floor never seen in the loss
// is inconclusive (exit 6): "within" a floor of zero would prove nothing.
#include <algorithm>
#include <cstdio>
#include <set>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/equivalence_floor.h"

namespace ra::compare {
namespace {

// Three digits for distances and factors; nine, a float's round trip, for the losses themselves.
std::string floor_number(double v, int digits = 3) {
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", digits, v);
  return text;
}

std::string step_word(const EquivalenceCurve& c, std::size_t i) {
  return "step " + std::to_string(c.steps[i]);
}

// The steps the table shows: 0, 1, 2, 4, 8, ... , where the ratio is, where B parts, the last.
std::set<std::size_t> shown_steps(const EquivalenceCurve& c) {
  std::set<std::size_t> shown;
  if (c.steps.empty()) return shown;
  for (std::size_t i = 0; i < c.steps.size(); i = i == 0 ? 1 : i * 2) shown.insert(i);
  shown.insert(c.ratio_at);
  shown.insert(c.steps.size() - 1);
  return shown;
}

// Whether some floor run's outcome (its digests, from the initial weights to the end) is not A's:
// else the floor runs are A again, and no floor was measured.
bool floor_differs(const ComparisonResult& r, const EquivalenceRoles& roles) {
  const auto class_of = [&](int run) {
    return r.runs[static_cast<std::size_t>(run)].outcome_class;
  };
  return std::any_of(roles.floor_runs.begin(), roles.floor_runs.end(),
                     [&](int f) { return class_of(f) != class_of(roles.a); });
}

std::string equivalence_summary(const EquivalenceCurve& c, CheckOutcome outcome) {
  if (c.steps.empty()) return "no step was recorded by A, B and the floor runs alike";
  if (outcome == CheckOutcome::inconclusive) {
    return "no floor was measured: every floor run's outcome is A's to the bit, so B's distance "
           "cannot be judged against it (a floor run must differ from A by rounding)";
  }
  if (c.beyond_from) {
    return "B differs beyond the floor from " + step_word(c, *c.beyond_from) + ": its loss by " +
           floor_number(c.ratio) + "x the floor (|A-B| " +
           floor_number(c.distance[*c.beyond_from]) + ", floor " +
           floor_number(c.floor[*c.beyond_from]) + "; the margin is " + floor_number(c.margin) +
           "x)";
  }
  return "B is equivalent to A within the floor through " + step_word(c, c.steps.size() - 1) +
         ": its loss at most " + floor_number(c.ratio) + "x the floor (at " +
         step_word(c, c.ratio_at) + "; the margin is " + floor_number(c.margin) + "x)";
}

nlohmann::json curve_json(const EquivalenceCurve& c) {
  nlohmann::json beyond = nullptr;
  if (c.beyond_from) beyond = c.steps[*c.beyond_from];
  return {{"margin", c.margin},
          {"floor_seen", c.floor_seen},
          {"beyond_from", beyond},
          {"ratio", c.ratio},
          {"ratio_step",
           c.steps.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.steps[c.ratio_at])},
          {"steps", c.steps},
          {"loss_a", c.loss_a},
          {"loss_b", c.loss_b},
          {"distance", c.distance},
          {"measured_floor", c.measured_floor},
          {"floor", c.floor}};
}

FindingPlot plot_of(const EquivalenceCurve& c) {
  FindingPlot p;
  p.title = "B's distance from A against the floor";
  p.x_label = "step";
  p.y_label = "|loss - loss of A|";
  p.log_y = true;
  std::vector<double> x(c.steps.begin(), c.steps.end()), beyond;
  for (double f : c.floor) beyond.push_back(f * c.margin);
  p.curves = {{"B", x, c.distance},
              {"floor (perturbed runs of A)", x, c.floor},
              {floor_number(c.margin) + "x the floor", x, beyond}};
  if (c.beyond_from) {
    p.marker_x = static_cast<double>(c.steps[*c.beyond_from]);
    p.marker_label = "beyond the floor";
  }
  return p;
}

// The snapshots of A, B and the floor runs after steps 0, 1, 2, 4, ... below `steps` that A and B
// both wrote (options.load_snapshot: the files beside the traces), with the floor runs that did.
std::vector<ParameterPoint> parameter_points(const CheckContext& c, const EquivalenceRoles& roles,
                                             std::size_t steps) {
  std::vector<ParameterPoint> points;
  if (!c.options.load_snapshot) return points;
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(steps); s = s == 0 ? 1 : s * 2) {
    const std::string point = "step-" + std::to_string(s);
    ParameterPoint p;
    p.step = s;
    if (!c.options.load_snapshot(roles.a, point, p.a)) continue;
    if (!c.options.load_snapshot(roles.b, point, p.b)) continue;
    for (int f : roles.floor_runs) {
      NamedTensors t;
      if (c.options.load_snapshot(f, point, t)) p.floor_runs.push_back(std::move(t));
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::string parameter_words(const ParameterCheck& p) {
  return p.tensor + " by " + floor_number(p.ratio()) + "x the floor (max |A-B| " +
         floor_number(p.distance) + ", floor " + floor_number(p.floor) + ")";
}

std::string parameters_detail(const ParameterFloor& p, double margin) {
  if (p.steps.empty()) {
    return "the parameters are not judged: no snapshots of A, B and a floor run at one step "
           "(exec --versus writes them after steps 0, 1, 2, 4, ...)";
  }
  std::string at = std::to_string(p.tensors) + " parameters at " + std::to_string(p.steps.size()) +
                   " snapshot step(s)";
  if (p.beyond) {
    return "the parameters (" + at + "): the first beyond the floor after step " +
           std::to_string(p.beyond->step) + ": " + parameter_words(*p.beyond);
  }
  return "the parameters (" + at + ") within " + floor_number(margin) + "x the floor, at most " +
         parameter_words(*p.widest) + " after step " + std::to_string(p.widest->step);
}

nlohmann::json parameters_json(const ParameterFloor& p) {
  const auto check = [](const std::optional<ParameterCheck>& c) -> nlohmann::json {
    if (!c) return nullptr;
    return {{"step", c->step},
            {"tensor", c->tensor},
            {"distance", c->distance},
            {"floor", c->floor},
            {"ratio", c->ratio()}};
  };
  return {{"steps", p.steps},
          {"tensors", p.tensors},
          {"beyond", check(p.beyond)},
          {"widest", check(p.widest)}};
}

}  // namespace

bool equivalence_applies(const CheckContext& c) {
  return c.options.expect_equivalent;
}

Finding equivalence(const CheckContext& c) {
  const EquivalenceRoles roles = equivalence_roles(c.traces);
  const auto& losses = c.result.growth.steps.losses;
  std::vector<std::vector<float>> floors;
  for (int f : roles.floor_runs) floors.push_back(losses[static_cast<std::size_t>(f)]);
  const EquivalenceCurve curve = equivalence_curve(losses[static_cast<std::size_t>(roles.a)],
                                                   losses[static_cast<std::size_t>(roles.b)],
                                                   floors, c.options.equivalence_margin);
  Finding f;
  f.name = "equivalence";
  const bool measured = floor_differs(c.result, roles);
  const ParameterFloor parameters =
      parameter_floor(parameter_points(c, roles, curve.steps.size()), c.options.equivalence_margin);
  f.outcome = curve.steps.empty() || !measured         ? CheckOutcome::inconclusive
              : curve.beyond_from || parameters.beyond ? CheckOutcome::failed
                                                       : CheckOutcome::passed;
  f.summary = curve.beyond_from || !parameters.beyond || f.outcome != CheckOutcome::failed
                  ? equivalence_summary(curve, f.outcome)
                  : "B differs beyond the floor after step " +
                        std::to_string(parameters.beyond->step) +
                        " in its parameters: " + parameter_words(*parameters.beyond) +
                        " (its loss within the floor)";
  const auto source = [&](int i) { return c.traces[static_cast<std::size_t>(i)].source; };
  std::string floor_sources;
  for (int i : roles.floor_runs) floor_sources += (floor_sources.empty() ? "" : ", ") + source(i);
  f.details = {
      "A: " + source(roles.a) + "; B: " + source(roles.b),
      "the floor: " + std::to_string(roles.floor_runs.size()) + " run(s) of A (" + floor_sources +
          ") that differ from it by rounding alone; per step the widest distance of their losses "
          "from A's so far, at least one unit in the last place of A's loss. A floor from few "
          "runs is an estimate (docs/equivalence.md, \"The floor\")",
      parameters_detail(parameters, c.options.equivalence_margin)};
  if (measured && !curve.floor_seen) {
    f.details.push_back("the floor runs never moved the loss from A's in " +
                        std::to_string(curve.steps.size()) +
                        " steps: the floor is one unit in the last place of A's loss");
  }
  if (curve.beyond_from && c.traces[static_cast<std::size_t>(roles.a)].header.trace_ops &&
      c.traces[static_cast<std::size_t>(roles.b)].header.trace_ops) {
    f.next_steps.push_back("repro-audit compare " + source(roles.a) + " " + source(roles.b) +
                           " --align");
  } else if (curve.beyond_from) {
    f.details.push_back("to name the op where they part: record A and B with --trace-ops " +
                        std::to_string(curve.steps[*curve.beyond_from]) +
                        " and compare their two traces with --align (docs/equivalence.md)");
  }
  f.table.columns = {"step", "loss A", "loss B", "|A-B|", "floor", "x floor"};
  for (std::size_t i : shown_steps(curve)) {
    f.table.rows.push_back({std::to_string(curve.steps[i]), floor_number(curve.loss_a[i], 9),
                            floor_number(curve.loss_b[i], 9), floor_number(curve.distance[i]),
                            floor_number(curve.floor[i]),
                            floor_number(curve.distance[i] / curve.floor[i])});
  }
  f.data = curve_json(curve);
  f.data["a"] = roles.a;
  f.data["b"] = roles.b;
  f.data["floor_runs"] = roles.floor_runs;
  f.data["parameters"] = parameters_json(parameters);
  f.plot = plot_of(curve);
  return f;
}

}  // namespace ra::compare
