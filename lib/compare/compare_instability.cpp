// Phase of the comparison: with a perturbed group (--seeds all), where its runs part from the
// reference run (their flipped weight, by design) and the instability finding per metric
// (compare/instability.h, compare_phases.h).
#include <algorithm>
#include <bit>
#include <map>

#include "compare/compare_phases.h"
#include "compare/instability.h"

namespace ra::compare {
namespace {

const char* const kGroups[] = {"same", "different", "perturbed"};

std::string group_of(const trace::Trace& t) {
  return t.header.seed_group.empty() ? "same" : t.header.seed_group;
}

std::vector<std::string> differing_initial_tensors(const trace::Trace& a,
                                                   const trace::Trace& reference) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.header.params.size(); ++i) {
    if (i >= a.initial_weights.size() || i >= reference.initial_weights.size() ||
        a.initial_weights[i] != reference.initial_weights[i]) {
      out.push_back(a.header.params[i].name);
    }
  }
  return out;
}

double std_of(const std::vector<double>& values, std::span<const std::size_t> runs) {
  std::vector<double> picked;
  for (std::size_t r : runs) picked.push_back(values[r]);
  return summarize(picked).std;
}

// Mean disagreement over the pairs of distinct runs among `runs` (a resample may draw a run twice:
// a run against itself says nothing about churn, so such pairs are left out).
double churn_of(const std::vector<std::vector<double>>& pairwise,
                std::span<const std::size_t> runs) {
  double sum = 0;
  std::size_t pairs = 0;
  for (std::size_t a = 0; a < runs.size(); ++a) {
    for (std::size_t b = a + 1; b < runs.size(); ++b) {
      if (runs[a] == runs[b]) continue;
      sum += pairwise[runs[a]][runs[b]];
      ++pairs;
    }
  }
  return pairs == 0 ? 0.0 : sum / static_cast<double>(pairs);
}

// One group's view of a metric: how many runs, and the statistic over a selection of them.
struct GroupMetric {
  std::size_t runs = 0;
  double mean = 0;
  std::vector<double> values;
  GroupStatistic statistic;
};

MetricFinding finding_of(const std::string& metric, const std::map<std::string, GroupMetric>& g) {
  MetricFinding f;
  f.metric = metric;
  for (const char* name : kGroups) {
    const auto it = g.find(name);
    if (it == g.end()) continue;
    std::vector<std::size_t> all(it->second.runs);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    f.groups.push_back(
        {name, it->second.runs, it->second.mean, it->second.statistic(all), it->second.values});
  }
  const auto ratio = [&](const char* num, const char* den) -> std::optional<RatioEstimate> {
    if (!g.count(num) || !g.count(den)) return std::nullopt;
    const GroupMetric& n = g.at(num);
    const GroupMetric& d = g.at(den);
    return bootstrap_ratio(n.runs, n.statistic, d.runs, d.statistic);
  };
  f.same_over_different = ratio("same", "different");
  f.perturbed_over_different = ratio("perturbed", "different");
  f.same_over_perturbed = ratio("same", "perturbed");
  return f;
}

// Final loss or eval accuracy: the std of the runs' values.
std::map<std::string, GroupMetric> value_metric(
    const std::map<std::string, std::vector<double>>& v) {
  std::map<std::string, GroupMetric> out;
  for (const auto& entry : v) {
    const std::vector<double>& values = entry.second;
    GroupMetric m;
    m.runs = values.size();
    m.mean = summarize(values).mean;
    m.values = values;
    m.statistic = [values](std::span<const std::size_t> runs) { return std_of(values, runs); };
    out[entry.first] = std::move(m);
  }
  return out;
}

std::map<std::string, GroupMetric> churn_metric(
    const std::map<std::string, std::vector<std::span<const std::int64_t>>>& predictions) {
  std::map<std::string, GroupMetric> out;
  for (const auto& [name, runs] : predictions) {
    std::vector<std::vector<double>> pairwise(runs.size(), std::vector<double>(runs.size(), 0.0));
    GroupMetric m;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      for (std::size_t j = 0; j < runs.size(); ++j) pairwise[i][j] = disagreement(runs[i], runs[j]);
      for (std::size_t j = i + 1; j < runs.size(); ++j) m.values.push_back(pairwise[i][j]);
    }
    m.runs = runs.size();
    m.mean = mean_pairwise_disagreement(runs);
    m.statistic = [pairwise](std::span<const std::size_t> r) { return churn_of(pairwise, r); };
    out[name] = std::move(m);
  }
  return out;
}

}  // namespace

std::optional<InstabilityFindings> instability_findings(
    const std::vector<trace::Trace>& traces,
    const std::vector<std::optional<std::vector<std::int64_t>>>& predictions) {
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < traces.size(); ++i) members[group_of(traces[i])].push_back(i);
  if (!members.count("perturbed")) return std::nullopt;
  InstabilityFindings out;
  if (members.count("same")) {
    out.reference = static_cast<int>(members["same"].front());
    const trace::Trace& reference = traces[members["same"].front()];
    for (std::size_t i : members["perturbed"]) {
      out.perturbed.push_back({static_cast<int>(i), *traces[i].header.perturbation,
                               differing_initial_tensors(traces[i], reference)});
    }
  } else {
    out.notes.push_back("no same-seed run: the perturbed runs' first divergence is not checked");
  }
  std::map<std::string, std::vector<double>> loss, accuracy;
  std::map<std::string, std::vector<std::span<const std::int64_t>>> classes;
  bool all_accuracy = true, all_predictions = true;
  for (const auto& [name, runs] : members) {
    for (std::size_t i : runs) {
      const trace::FinalRecord& f = *traces[i].final;
      loss[name].push_back(std::bit_cast<float>(f.final_loss_bits));
      if (f.eval_accuracy) accuracy[name].push_back(*f.eval_accuracy);
      all_accuracy = all_accuracy && f.eval_accuracy.has_value();
      const auto& p = predictions.at(i);
      if (p && (classes.empty() || classes.begin()->second.front().size() == p->size())) {
        classes[name].push_back(*p);
      } else {
        all_predictions = false;
      }
    }
  }
  out.metrics.push_back(finding_of("final_loss", value_metric(loss)));
  interpret(out.metrics.back(), "final loss");
  if (all_accuracy) {
    out.metrics.push_back(finding_of("eval_accuracy", value_metric(accuracy)));
    interpret(out.metrics.back(), "eval accuracy");
  }
  if (all_predictions) {
    out.metrics.push_back(finding_of("disagreement", churn_metric(classes)));
    interpret(out.metrics.back(), "disagreement");
  } else {
    // Where the predictions come from, by the runs' kind: the engine evaluates its eval set; a
    // PyTorch script hands them over with rec.eval(predictions, labels).
    out.notes.push_back(
        phases::all_pytorch(traces)
            ? "not every run recorded its predictions of one eval set: no disagreement (call "
              "rec.eval(predictions, labels) after the evaluation, with the predicted class of "
              "every eval sample in a fixed order)"
            : "not every run recorded its predictions of one eval set: no disagreement (give "
              "the spec an eval set)");
  }
  return out;
}

}  // namespace ra::compare

namespace ra::compare::phases {

std::vector<std::string> perturbation_warnings(const InstabilityFindings& found) {
  std::vector<std::string> warnings;
  for (const PerturbedRunCheck& c : found.perturbed) {
    if (c.parts_at_perturbation()) continue;
    std::string differing;
    for (const std::string& name : c.differing) differing += (differing.empty() ? "" : ", ") + name;
    warnings.push_back("perturbed run " + std::to_string(c.run) + " flipped a bit of " +
                       c.perturbation.tensor + ", but its initial weights differ from run " +
                       std::to_string(found.reference) + "'s in " +
                       (differing.empty() ? std::string("none") : differing) +
                       ": the perturbation is not its only difference at the start");
  }
  return warnings;
}

}  // namespace ra::compare::phases
