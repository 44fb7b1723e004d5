// Phase of the comparison: per category of recorded state, where the compared runs first part
// from the reference run and at how many steps they differ (compare_phases.h).
#include <bit>
#include <utility>

#include "compare/compare_phases.h"

namespace ra::audit::phases {
namespace {

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
std::optional<Divergence> divergence_at(Category c, const ComparedRuns& compared,
                                        std::int64_t step) {
  const std::vector<const Trace*>& runs = compared.traces;
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
    if (differs) differing.push_back(compared.ids[i]);
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

CategoryVerdict verdict_of(Category c, const ComparedRuns& compared) {
  CategoryVerdict v;
  v.category = c;
  if (compared.traces.size() >= 2) {
    if (c == Category::initial_weights) {
      v.first = divergence_at(c, compared, 0);
      v.steps_differing = v.first ? 1 : 0;
    } else {
      for (std::int64_t s = 0; s < compared.common_steps; ++s) {
        auto d = divergence_at(c, compared, s);
        if (!d) continue;
        ++v.steps_differing;
        if (!v.first) v.first = std::move(d);
      }
    }
  }
  v.identical = !v.first;
  return v;
}

}  // namespace

std::vector<CategoryVerdict> category_verdicts(const ComparedRuns& compared) {
  std::vector<CategoryVerdict> verdicts;
  for (Category c : kCategories) verdicts.push_back(verdict_of(c, compared));
  return verdicts;
}

StepSeries step_series(const std::vector<Trace>& traces, const ComparedRuns& compared) {
  StepSeries series;
  for (const Trace& t : traces) {
    std::vector<float> losses;
    for (const StepRecord& r : t.steps) losses.push_back(std::bit_cast<float>(r.loss_bits));
    series.losses.push_back(std::move(losses));
  }
  if (compared.traces.empty()) return series;
  const std::vector<const Trace*>& runs = compared.traces;
  for (Category c : kCategories) {
    if (c == Category::initial_weights) continue;
    const std::size_t first_row = series.rows.size();
    for (std::int64_t s = 0; s < compared.common_steps; ++s) {
      const std::vector<Slot> ref = slots(c, *runs[0], s);
      if (s == 0) {
        for (const Slot& slot : ref) series.rows.push_back({c, slot.name, {}});
      }
      std::vector<bool> differs(ref.size(), false);
      for (std::size_t i = 1; i < runs.size(); ++i) {
        const std::vector<Slot> other = slots(c, *runs[i], s);
        for (std::size_t k = 0; k < ref.size(); ++k) {
          differs[k] = differs[k] || other[k].value != ref[k].value;
        }
      }
      for (std::size_t k = 0; k < ref.size(); ++k) {
        series.rows[first_row + k].differs.push_back(differs[k]);
      }
    }
  }
  return series;
}

std::optional<Divergence> first_divergence(const std::vector<CategoryVerdict>& verdicts) {
  std::optional<Divergence> first;
  const auto key = [](const Divergence& d) { return d.step ? *d.step : -1; };
  for (const CategoryVerdict& v : verdicts) {
    if (v.first && (!first || key(*v.first) < key(*first))) first = v.first;
  }
  return first;
}

}  // namespace ra::audit::phases
