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

// The step of the initial state (before step 0): of the initial weights, and of the buffers.
constexpr std::int64_t kInitial = -1;

std::vector<Slot> per_tensor(const std::vector<TensorInfo>& tensors,
                             const std::vector<Digest128>& digests) {
  std::vector<Slot> out;
  for (std::size_t p = 0; p < tensors.size(); ++p) out.push_back({tensors[p].name, digests[p]});
  return out;
}

std::vector<Slot> slots(Category c, const Trace& t, std::int64_t step) {
  std::vector<Slot> out;
  const auto& params = t.header.params;
  if (c == Category::initial_weights) return per_tensor(params, t.initial_weights);
  if (c == Category::buffers && step == kInitial) {
    return per_tensor(t.header.buffers, t.initial_buffers);
  }
  const StepRecord& r = t.steps[step];
  switch (c) {
    case Category::batches:
      out = {{"indices", r.batch_indices}, {"inputs", r.batch_inputs}, {"labels", r.batch_labels}};
      break;
    case Category::buffers:
      out = per_tensor(t.header.buffers, r.buffers);
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
    case Category::steps:
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
  if (c != Category::initial_weights && step != kInitial) {
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
      if (c == Category::buffers) {  // the initial buffers first, as the initial weights
        v.first = divergence_at(c, compared, kInitial);
        v.steps_differing = v.first ? 1 : 0;
      }
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

// Buffers are a category only of runs that record any (a PyTorch model with BatchNorm...).
bool has_buffers(const ComparedRuns& compared) {
  return !compared.traces.empty() && !compared.traces[0]->header.buffers.empty();
}

std::vector<CategoryVerdict> category_verdicts(const ComparedRuns& compared) {
  std::vector<CategoryVerdict> verdicts;
  for (Category c : kCategories) {
    if (c != Category::buffers || has_buffers(compared))
      verdicts.push_back(verdict_of(c, compared));
  }
  return verdicts;
}

std::optional<Divergence> step_count_divergence(const ComparedRuns& compared) {
  const std::vector<const Trace*>& runs = compared.traces;
  const Trace* longest = nullptr;
  for (const Trace* t : runs) {
    if (!longest || t->steps.size() > longest->steps.size()) longest = t;
  }
  if (!longest || static_cast<std::int64_t>(longest->steps.size()) == compared.common_steps) {
    return std::nullopt;
  }
  Divergence d;
  d.category = Category::steps;
  d.tensor = "steps";
  const StepRecord& at = longest->steps[static_cast<std::size_t>(compared.common_steps)];
  d.step = at.step;
  d.epoch = at.epoch;
  d.batch = at.batch;
  const std::size_t reference_steps = runs[0]->steps.size();
  for (std::size_t i = 1; i < runs.size(); ++i) {
    if (runs[i]->steps.size() == reference_steps) continue;
    d.runs_differing.push_back(compared.ids[i]);
    d.detail += (d.detail.empty() ? "" : ", ") + ("run " + std::to_string(compared.ids[i])) +
                " ended after " + std::to_string(runs[i]->steps.size()) + " steps";
  }
  d.detail +=
      ", run " + std::to_string(compared.ids[0]) + " after " + std::to_string(reference_steps);
  return d;
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
