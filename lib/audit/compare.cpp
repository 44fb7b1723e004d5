#include "audit/compare.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>

#include "audit/duplicate_runs.h"
#include "audit/environment.h"
#include "core/error.h"
#include "spec/spec.h"

namespace ra::audit {
namespace {

float loss_value(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Everything a run did, as one digest: two runs share it iff every recorded digest and every loss
// bit is equal (timings excluded).
Digest128 outcome_signature(const Trace& t) {
  std::vector<Digest128> parts = t.initial_weights;
  for (const StepRecord& r : t.steps) {
    parts.push_back(r.batch_indices);
    parts.push_back(r.batch_inputs);
    parts.push_back(r.batch_labels);
    parts.push_back(Digest128{r.loss_bits, static_cast<std::uint64_t>(r.step)});
    parts.insert(parts.end(), r.grads.begin(), r.grads.end());
    parts.insert(parts.end(), r.weights.begin(), r.weights.end());
    parts.push_back(r.optimizer_state);
  }
  if (t.final) {
    parts.push_back(
        Digest128{t.final->final_loss_bits, static_cast<std::uint64_t>(t.final->steps)});
    parts.insert(parts.end(), t.final->weights.begin(), t.final->weights.end());
  }
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(parts.size() * 16)}, parts.data(),
                      parts.size() * sizeof(Digest128));
}

// The tensors of one category at one step, in causal order, as (name, digest) per run.
struct Slot {
  std::string name;
  Digest128 value;
};

std::vector<Slot> slots(Category c, const Trace& t, std::int64_t step) {
  std::vector<Slot> out;
  const auto& params = t.header.params;
  if (c == Category::initial_weights) {
    for (std::size_t p = 0; p < params.size(); ++p)
      out.push_back({params[p].name, t.initial_weights[p]});
    return out;
  }
  const StepRecord& r = t.steps[step];
  switch (c) {
    case Category::batches:
      out = {{"indices", r.batch_indices}, {"inputs", r.batch_inputs}, {"labels", r.batch_labels}};
      break;
    case Category::losses:
      out = {{"loss", Digest128{r.loss_bits, 0}}};
      break;
    case Category::gradients:
      // Backpropagation order: the last layer's gradients are computed first.
      for (std::size_t p = params.size(); p-- > 0;) out.push_back({params[p].name, r.grads[p]});
      break;
    case Category::weights:
      for (std::size_t p = 0; p < params.size(); ++p) out.push_back({params[p].name, r.weights[p]});
      break;
    case Category::optimizer_state:
      out = {{"optimizer_state", r.optimizer_state}};
      break;
    case Category::initial_weights:
      break;
  }
  return out;
}

// Compares one category at one step (or the initial weights) over the compared runs.
std::optional<Divergence> divergence_at(Category c, const std::vector<const Trace*>& runs,
                                        const std::vector<int>& ids, std::int64_t step) {
  const std::vector<Slot> ref = slots(c, *runs[0], step);
  std::optional<std::size_t> first_slot;
  std::vector<int> differing;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const std::vector<Slot> other = slots(c, *runs[i], step);
    bool differs = false;
    for (std::size_t s = 0; s < ref.size(); ++s) {
      if (other[s].value != ref[s].value) {
        differs = true;
        if (!first_slot || s < *first_slot) first_slot = s;
      }
    }
    if (differs) differing.push_back(ids[i]);
  }
  if (differing.empty()) return std::nullopt;
  Divergence d;
  d.category = c;
  d.tensor = ref[*first_slot].name;
  d.runs_differing = std::move(differing);
  if (c != Category::initial_weights) {
    const StepRecord& r = runs[0]->steps[step];
    d.step = r.step;
    d.epoch = r.epoch;
    d.batch = r.batch;
  }
  return d;
}

// The run (other than the reference) whose loss at `step` is farthest from the reference's.
std::optional<LossDifference> worst_loss_difference(
    const std::vector<const Trace*>& runs, const std::vector<int>& ids,
    std::uint32_t (*bits_at)(const Trace&, std::int64_t), std::int64_t step) {
  std::optional<LossDifference> worst;
  const std::uint32_t ref = bits_at(*runs[0], step);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const std::uint32_t other = bits_at(*runs[i], step);
    if (other == ref) continue;
    LossDifference d{step, ids[i], loss_value(ref), loss_value(other),
                     ulp_distance(loss_value(ref), loss_value(other))};
    if (!worst || d.ulp > worst->ulp) worst = d;
  }
  return worst;
}

std::uint32_t step_loss_bits(const Trace& t, std::int64_t step) {
  return t.steps[step].loss_bits;
}
std::uint32_t final_loss_bits(const Trace& t, std::int64_t) {
  return t.final->final_loss_bits;
}

std::string describe_mode(const nlohmann::json& determinism) {
  std::string text = determinism.value("mode", "?");
  const auto ops = determinism.value("ops", nlohmann::json::object());
  if (!ops.empty()) {
    text += " (";
    bool first = true;
    for (const auto& [op, mode] : ops.items()) {
      text += (first ? "" : ", ") + op + ": " + mode.get<std::string>();
      first = false;
    }
    text += ")";
  }
  return text;
}

// Every reducing op of the run was in deterministic mode (the policy recorded in its header):
// its override, else the run's mode. (A nondeterministic run with every op overridden to
// deterministic counts.)
bool fully_deterministic(const Trace& t) {
  const nlohmann::json& d = t.header.determinism;
  const std::string mode = d.value("mode", "");
  const nlohmann::json ops = d.value("ops", nlohmann::json::object());
  for (int i = 0; i < spec::kReducingOpCount; ++i) {
    const char* op = spec::to_string(static_cast<spec::ReducingOp>(i));
    if (ops.value(op, mode) != "deterministic") return false;
  }
  return true;
}

void check_comparable(const std::vector<Trace>& traces) {
  if (traces.empty()) throw InputError("no traces to compare");
  const Trace& ref = traces[0];
  for (const Trace& t : traces) {
    if (!t.final) throw InputError(t.source + ": the run did not finish (no end record)");
    if (t.header.spec_digest != ref.header.spec_digest) {
      throw InputError("traces come from different specs: " + ref.source + " has spec digest " +
                       ref.header.spec_digest + ", " + t.source + " has " + t.header.spec_digest);
    }
    bool same_params = t.header.params.size() == ref.header.params.size();
    for (std::size_t p = 0; same_params && p < t.header.params.size(); ++p) {
      same_params = t.header.params[p].name == ref.header.params[p].name &&
                    t.header.params[p].shape == ref.header.params[p].shape;
    }
    if (!same_params) {
      throw InputError("traces have different parameter lists: " + ref.source + " and " + t.source);
    }
  }
}

TensorDifference accumulate(TensorDifference total, const TensorDifference& d) {
  total.differing += d.differing;
  total.max_abs = std::max(total.max_abs, d.max_abs);
  total.max_ulp = std::max(total.max_ulp, d.max_ulp);
  return total;
}

// Snapshot divergence at `point` between the reference and every other compared run.
std::optional<SnapshotDivergence> snapshot_divergence(const ComparisonOptions& options,
                                                      const std::vector<int>& ids,
                                                      const std::string& point,
                                                      std::optional<std::int64_t> step) {
  if (!options.load_snapshot || ids.size() < 2) return std::nullopt;
  std::vector<std::pair<std::string, Tensor>> ref;
  if (!options.load_snapshot(ids[0], point, ref)) return std::nullopt;
  SnapshotDivergence out;
  out.point = point;
  out.step = step;
  for (const auto& [name, tensor] : ref) out.tensors.push_back({name, {}});
  bool any = false;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    std::vector<std::pair<std::string, Tensor>> other;
    if (!options.load_snapshot(ids[i], point, other)) continue;
    if (other.size() != ref.size())
      throw InputError("snapshot " + point + " of run " + std::to_string(ids[i]) +
                       " has other tensors than run " + std::to_string(ids[0]));
    any = true;
    for (std::size_t k = 0; k < ref.size(); ++k) {
      if (other[k].first != ref[k].first || other[k].second.shape() != ref[k].second.shape()) {
        throw InputError("snapshot " + point + " of run " + std::to_string(ids[i]) + ": tensor " +
                         other[k].first + " does not match run " + std::to_string(ids[0]));
      }
      const TensorDifference d = compare_tensors(ref[k].second, other[k].second);
      TensorDifference& worst = out.tensors[k].difference;
      worst.differing = std::max(worst.differing, d.differing);
      worst.max_abs = std::max(worst.max_abs, d.max_abs);
      worst.max_ulp = std::max(worst.max_ulp, d.max_ulp);
    }
  }
  if (!any) return std::nullopt;
  for (const auto& t : out.tensors) out.total = accumulate(out.total, t.difference);
  return out;
}

}  // namespace

const char* to_string(Category c) {
  switch (c) {
    case Category::initial_weights:
      return "initial_weights";
    case Category::batches:
      return "batches";
    case Category::losses:
      return "losses";
    case Category::gradients:
      return "gradients";
    case Category::weights:
      return "weights";
    case Category::optimizer_state:
      return "optimizer_state";
  }
  return "?";
}

ComparisonResult compare_traces(const std::vector<Trace>& traces,
                                const ComparisonOptions& options) {
  check_comparable(traces);
  ComparisonResult result;
  result.expect_identical = options.expect_identical.value_or(std::all_of(
      traces.begin(), traces.end(), [](const Trace& t) { return fully_deterministic(t); }));
  result.spec_name = traces[0].header.spec.value("name", "");
  result.spec_digest = traces[0].header.spec_digest;
  result.copies = copies_of_one_run(traces);
  for (const auto& group : result.copies) result.warnings.push_back(copies_warning(traces, group));

  // Runs and outcome classes.
  std::vector<Digest128> class_signatures;
  std::set<std::string> modes;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    RunSummary s;
    s.run = static_cast<int>(i);
    s.seed_group = t.header.seed_group;
    s.seed_init = t.header.seed_init;
    s.seed_data = t.header.seed_data;
    s.seed_dropout = t.header.seed_dropout;
    s.steps = t.final->steps;
    s.final_loss_bits = t.final->final_loss_bits;
    s.final_loss = loss_value(s.final_loss_bits);
    s.eval_accuracy = t.final->eval_accuracy;
    s.eval_loss = t.final->eval_loss;
    s.median_step_seconds = t.final->median_step_seconds;
    if (s.steps > 0 && s.median_step_seconds > 0) {
      s.recording_fraction = t.final->recording_seconds / (s.median_step_seconds * s.steps);
    }
    s.source = t.source;
    const Digest128 sig = outcome_signature(t);
    auto it = std::find(class_signatures.begin(), class_signatures.end(), sig);
    s.outcome_class = static_cast<int>(it - class_signatures.begin());
    if (it == class_signatures.end()) {
      class_signatures.push_back(sig);
      result.classes.emplace_back();
    }
    result.classes[s.outcome_class].push_back(s.run);
    modes.insert(describe_mode(t.header.determinism));
    result.runs.push_back(s);
  }
  result.mode_summary = modes.size() == 1 ? *modes.begin() : "mixed";

  // The runs expected to agree: the same-seed group (all runs when none is labelled "same").
  std::vector<const Trace*> compared;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    if (traces[i].header.seed_group != "different") {
      compared.push_back(&traces[i]);
      result.compared_runs.push_back(static_cast<int>(i));
    }
  }
  const std::vector<int>& ids = result.compared_runs;
  std::set<int> compared_classes;
  for (int id : ids) compared_classes.insert(result.runs[id].outcome_class);
  result.identical = compared_classes.size() <= 1;

  // Categories: first divergence and number of differing steps.
  std::int64_t common_steps = 0;
  if (!compared.empty()) {
    common_steps = static_cast<std::int64_t>(compared[0]->steps.size());
    for (const Trace* t : compared)
      common_steps = std::min<std::int64_t>(common_steps, t->steps.size());
  }
  for (Category c : kCategories) {
    CategoryVerdict v;
    v.category = c;
    if (compared.size() >= 2) {
      if (c == Category::initial_weights) {
        v.first = divergence_at(c, compared, ids, 0);
        v.steps_differing = v.first ? 1 : 0;
      } else {
        for (std::int64_t s = 0; s < common_steps; ++s) {
          auto d = divergence_at(c, compared, ids, s);
          if (!d) continue;
          ++v.steps_differing;
          if (!v.first) v.first = std::move(d);
        }
      }
    }
    v.identical = !v.first;
    result.categories.push_back(v);
  }
  // Overall: earliest step, ties broken by causal order (the categories are in that order).
  for (const CategoryVerdict& v : result.categories) {
    if (!v.first) continue;
    const auto key = [](const Divergence& d) { return d.step ? *d.step : -1; };
    if (!result.first_divergence || key(*v.first) < key(*result.first_divergence)) {
      result.first_divergence = v.first;
    }
  }

  // How much: losses from the traces.
  if (compared.size() >= 2) {
    for (std::int64_t s = 0; s < common_steps && !result.first_loss_difference; ++s) {
      result.first_loss_difference = worst_loss_difference(compared, ids, step_loss_bits, s);
    }
    result.final_loss_difference = worst_loss_difference(compared, ids, final_loss_bits, 0);
  }
  result.loss_tolerance = options.loss_tolerance;
  for (const Trace* t : compared) {
    const double ref = loss_value(compared[0]->final->final_loss_bits);
    const double other = loss_value(t->final->final_loss_bits);
    // NaN compares false: a NaN loss is never within tolerance (equal infinities are).
    const bool close = std::abs(other - ref) <= options.loss_tolerance * std::abs(ref);
    if (!close && other != ref) result.within_tolerance = false;
  }

  // Growth per epoch.
  if (compared.size() >= 2) {
    for (const EpochRecord& e : compared[0]->epochs) {
      EpochGrowth g;
      g.epoch = e.epoch;
      std::int64_t last_step = -1;
      for (std::int64_t s = 0; s < common_steps; ++s) {
        if (compared[0]->steps[s].epoch != e.epoch) continue;
        last_step = s;
        const float ref = loss_value(compared[0]->steps[s].loss_bits);
        for (std::size_t i = 1; i < compared.size(); ++i) {
          const float other = loss_value(compared[i]->steps[s].loss_bits);
          g.max_abs_loss_difference =
              std::max(g.max_abs_loss_difference, std::abs(static_cast<double>(other) - ref));
          g.max_loss_ulp = std::max(g.max_loss_ulp, ulp_distance(ref, other));
        }
      }
      if (last_step >= 0) {
        const auto& params = compared[0]->header.params;
        for (std::size_t p = 0; p < params.size(); ++p) {
          bool differs = false;
          for (std::size_t i = 1; i < compared.size(); ++i) {
            differs |= compared[i]->steps[last_step].weights[p] !=
                       compared[0]->steps[last_step].weights[p];
          }
          g.weights_differing += differs ? 1 : 0;
        }
      }
      if (e.eval_accuracy) {
        double worst = 0;
        for (std::size_t i = 1; i < compared.size(); ++i) {
          for (const EpochRecord& o : compared[i]->epochs) {
            if (o.epoch == e.epoch && o.eval_accuracy) {
              worst = std::max(worst, std::abs(*o.eval_accuracy - *e.eval_accuracy));
            }
          }
        }
        g.max_abs_eval_accuracy_difference = worst;
      }
      if (auto snap =
              snapshot_divergence(options, ids, "epoch-" + std::to_string(e.epoch),
                                  last_step >= 0 ? std::optional(last_step) : std::nullopt)) {
        g.snapshot = snap->total;
      }
      result.growth.push_back(g);
    }
  }

  // How much, from snapshots: initial, at the first divergence (when a snapshot was taken after
  // that step), and final.
  if (auto snap = snapshot_divergence(options, ids, "initial", std::nullopt)) {
    result.snapshots.push_back(std::move(*snap));
  }
  if (result.first_divergence && result.first_divergence->step) {
    const std::int64_t s = *result.first_divergence->step;
    if (auto snap = snapshot_divergence(options, ids, "step-" + std::to_string(s), s)) {
      result.snapshots.push_back(std::move(*snap));
    }
  }
  if (auto snap = snapshot_divergence(options, ids, "final", common_steps - 1)) {
    result.snapshots.push_back(std::move(*snap));
  }

  // Outcome statistics per seed group.
  std::map<std::string, std::vector<const RunSummary*>> groups;
  for (const RunSummary& r : result.runs)
    groups[r.seed_group.empty() ? "same" : r.seed_group].push_back(&r);
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> loss_and_accuracy;
  for (const auto& [name, members] : groups) {
    std::vector<double> loss, accuracy, step_ms;
    for (const RunSummary* r : members) {
      loss.push_back(r->final_loss);
      if (r->eval_accuracy) accuracy.push_back(*r->eval_accuracy);
      step_ms.push_back(r->median_step_seconds * 1e3);
    }
    result.statistics.push_back({name, summarize(loss), summarize(accuracy), summarize(step_ms)});
    loss_and_accuracy[name] = {loss, accuracy};
  }
  if (loss_and_accuracy.count("same") && loss_and_accuracy.count("different")) {
    const auto& same = loss_and_accuracy["same"];
    const auto& different = loss_and_accuracy["different"];
    result.loss_std_ratio = std_ratio(same.first, different.first);
    if (!same.second.empty() && !different.second.empty()) {
      result.accuracy_std_ratio = std_ratio(same.second, different.second);
    }
  }

  // Environment and ledger differences against run 0: the likely explanation of a divergence.
  std::set<std::string> seen;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    for (const std::string& key :
         fingerprint_differences(traces[0].header.environment, traces[i].header.environment)) {
      const std::string line =
          key + ": " + traces[0].header.environment.value(key, nlohmann::json()).dump() +
          " (run 0) vs " + traces[i].header.environment.value(key, nlohmann::json()).dump() +
          " (run " + std::to_string(i) + ")";
      if (seen.insert(line).second) result.environment_differences.push_back(line);
    }
    if (traces[i].header.ledger != traces[0].header.ledger) {
      result.ledger_differences.push_back("run " + std::to_string(i) + ": " +
                                          traces[i].header.ledger.dump() +
                                          " vs run 0: " + traces[0].header.ledger.dump());
    }
  }
  return result;
}

}  // namespace ra::audit
