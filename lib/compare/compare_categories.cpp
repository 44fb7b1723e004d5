// Phase of the comparison: per category of recorded state, the tensors a step records and where
// the compared runs part from the reference run there (compare_phases.h); the walk over the steps
// that gathers the verdicts is step_walk.cpp.
#include <utility>

#include "compare/compare_phases.h"
#include "trace/tensor_digests.h"

namespace ra::compare::phases {
namespace {

std::vector<Slot> per_tensor(const std::vector<trace::TensorInfo>& tensors,
                             const std::vector<Digest128>& digests) {
  std::vector<Slot> out;
  for (std::size_t p = 0; p < tensors.size(); ++p) out.push_back({tensors[p].name, digests[p]});
  return out;
}

}  // namespace

bool has_levels_of_detail(Category c) {
  return c == Category::gradients || c == Category::weights || c == Category::buffers;
}

Digest128 combined_digest(Category c, const trace::StepRecord& r) {
  switch (c) {
    case Category::gradients:
      return r.per_tensor ? trace::category_digest(r.grads) : r.grads_digest;
    case Category::weights:
      return r.per_tensor ? trace::category_digest(r.weights) : r.weights_digest;
    case Category::buffers:
      return r.per_tensor ? trace::category_digest(r.buffers) : r.buffers_digest;
    default:
      return {};
  }
}

std::vector<std::string> slot_names(Category c, const trace::TraceHeader& h) {
  trace::StepRecord named;  // a step record of the header's sizes, for step_slots' names
  named.grads.resize(h.params.size());
  named.weights.resize(h.params.size());
  named.buffers.resize(h.buffers.size());
  std::vector<std::string> out;
  for (const Slot& s : step_slots(c, h, named)) out.push_back(s.name);
  return out;
}

std::vector<Slot> initial_slots(Category c, const trace::Trace& t) {
  return c == Category::initial_weights ? per_tensor(t.header.params, t.initial_weights)
                                        : per_tensor(t.header.buffers, t.initial_buffers);
}

std::vector<Slot> step_slots(Category c, const trace::TraceHeader& h, const trace::StepRecord& r) {
  std::vector<Slot> out;
  const auto& params = h.params;
  switch (c) {
    case Category::batches:
      out = {{"indices", r.batch_indices}, {"inputs", r.batch_inputs}, {"labels", r.batch_labels}};
      break;
    case Category::buffers:
      out = per_tensor(h.buffers, r.buffers);
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

std::optional<Divergence> slots_divergence(Category c, const std::vector<std::vector<Slot>>& runs,
                                           const std::vector<int>& ids,
                                           const trace::StepRecord* at) {
  const std::vector<Slot>& ref = runs[0];
  std::optional<std::size_t> first_slot;
  std::vector<int> differing;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    bool differs = false;
    for (std::size_t s = 0; s < ref.size(); ++s) {
      if (runs[i][s].value != ref[s].value) {
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
  if (at != nullptr) {
    d.step = at->step;
    d.epoch = at->epoch;
    d.batch = at->batch;
  }
  return d;
}

// Buffers are a category only of runs that record any (a PyTorch model with BatchNorm...).
bool has_buffers(const ComparedRuns& compared) {
  return !compared.traces.empty() && !compared.traces[0]->header.buffers.empty();
}

std::optional<Divergence> first_divergence(const std::vector<CategoryVerdict>& verdicts) {
  std::optional<Divergence> first;
  const auto key = [](const Divergence& d) { return d.step ? *d.step : -1; };
  for (const CategoryVerdict& v : verdicts) {
    if (v.first && (!first || key(*v.first) < key(*first))) first = v.first;
  }
  return first;
}

}  // namespace ra::compare::phases
