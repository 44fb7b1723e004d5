#include "compare/step_walk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "compare/statistics.h"
#include "core/error.h"
#include "trace/tensor_digests.h"
#include "trace/trace_io.h"
#include "trace/trace_reader.h"

namespace ra::compare::phases {
namespace {

// One XXH3-128 over digests in order.
Digest128 digest_of(const std::vector<Digest128>& all) {
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(all.size() * 16)}, all.data(),
                      all.size() * sizeof(Digest128));
}

// A running digest: the last one and the parts of the next step, as one XXH3-128.
Digest128 fold(const Digest128& chain, const std::vector<Digest128>& parts) {
  std::vector<Digest128> all{chain};
  all.insert(all.end(), parts.begin(), parts.end());
  return digest_of(all);
}

Digest128 text_digest(const std::string& text) {
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(text.size())}, text.data(),
                      text.size());
}

// What a step recorded, timings excluded (the outcome signature's part of it).
void outcome_parts(const trace::StepRecord& r, std::vector<Digest128>& parts) {
  parts.push_back(r.batch_indices);
  parts.push_back(r.batch_inputs);
  parts.push_back(r.batch_labels);
  parts.push_back(Digest128{r.loss_bits, static_cast<std::uint64_t>(r.step)});
  // One digest per category, however the step recorded it (a level of detail): a run recorded per
  // tensor and the same run recorded per category have one outcome.
  parts.push_back(combined_digest(Category::gradients, r));
  parts.push_back(combined_digest(Category::weights, r));
  parts.push_back(combined_digest(Category::buffers, r));
  parts.push_back(r.optimizer_state);
}

// The rest of a step record: its place, its time and its op records, names and types included.
void content_parts(const trace::StepRecord& r, std::vector<Digest128>& parts) {
  parts.push_back(
      Digest128{static_cast<std::uint64_t>(r.epoch), static_cast<std::uint64_t>(r.batch)});
  parts.push_back(Digest128{std::bit_cast<std::uint64_t>(r.seconds), r.ops_recorded ? 1u : 0u});
  for (const trace::OpRecord& o : r.ops) {
    std::string text;
    for (const std::string* field : {&o.op, &o.layer, &o.mode, &o.ledger_key, &o.algorithm}) {
      text.append(*field).push_back('\0');
    }
    text.push_back(!o.algorithm_deterministic ? '-' : *o.algorithm_deterministic ? '1' : '0');
    for (const auto* types : {&o.in_types, &o.out_types}) {
      text.push_back('\1');
      for (const std::string& t : *types) text.append(t).push_back('\0');
    }
    parts.push_back(text_digest(text));
    parts.push_back(Digest128{o.in.size(), o.out.size()});
    parts.insert(parts.end(), o.in.begin(), o.in.end());
    parts.insert(parts.end(), o.out.begin(), o.out.end());
  }
}

// The digests of a category at a step, in the order of its slots (step_slots), without names; at a
// step some run recorded per category (`per_category`), one digest for gradients, weights, buffers.
void category_values(Category c, const trace::StepRecord& r, bool per_category,
                     std::vector<Digest128>& out) {
  out.clear();
  if (per_category && has_levels_of_detail(c)) {
    out.push_back(combined_digest(c, r));
    return;
  }
  switch (c) {
    case Category::batches:
      out = {r.batch_indices, r.batch_inputs, r.batch_labels};
      break;
    case Category::buffers:
      out = r.buffers;
      break;
    case Category::losses:
      out = {Digest128{r.loss_bits, 0}};
      break;
    case Category::gradients:
      out.assign(r.grads.rbegin(), r.grads.rend());  // backpropagation order
      break;
    case Category::weights:
      out = r.weights;
      break;
    case Category::optimizer_state:
      out = {r.optimizer_state};
      break;
    case Category::initial_weights:
    case Category::steps:
      break;
  }
}

struct StepPlace {
  std::int64_t step = 0, epoch = 0, batch = 0;
};

}  // namespace

struct StepWalk::State {
  std::vector<const trace::Trace*> traces;
  std::vector<std::size_t> positions;  // compared runs, reference first
  std::vector<int> ids;
  bool with_root_causes = false;

  std::int64_t next_step = 0;
  bool common = true;  // every compared run has had every step so far
  StepFindings found;
  std::vector<Digest128> outcome_chain, content_chain;
  std::vector<Category> categories;  // those with verdicts (buffers only when recorded)
  std::vector<std::optional<StepPlace>> at_first_uncommon;  // per compared run
  std::vector<bool> caused;  // per compared run: its root cause is found
  std::vector<std::pair<int, RootCause>> causes;
  std::vector<Digest128> parts, ref_values, other_values;
  std::vector<std::size_t> rows_of;  // the map's rows per category (kCategories order)
  std::vector<char> differs;

  CategoryVerdict& verdict(Category c) {
    for (CategoryVerdict& v : found.verdicts)
      if (v.category == c) return v;
    return found.verdicts.front();  // unreachable: every walked category has a verdict
  }

  void start() {
    const std::size_t n = traces.size();
    found.step_counts.assign(n, 0);
    found.series.losses.resize(n);
    for (const trace::Trace* t : traces) {
      std::vector<Digest128> initial = t->initial_weights;
      initial.insert(initial.end(), t->initial_buffers.begin(), t->initial_buffers.end());
      outcome_chain.push_back(fold(Digest128{}, initial));
      content_chain.push_back(
          text_digest(trace::header_line(t->header) +
                      trace::init_line(t->header, t->initial_weights, t->initial_buffers)));
    }
    const bool buffers = !positions.empty() && !traces[positions[0]]->header.buffers.empty();
    for (Category c : kCategories) {
      if (c == Category::buffers && !buffers) continue;
      categories.push_back(c);
      CategoryVerdict v;
      v.category = c;
      if (positions.size() >= 2 && (c == Category::initial_weights || c == Category::buffers)) {
        std::vector<std::vector<Slot>> slots;
        for (std::size_t p : positions) slots.push_back(initial_slots(c, *traces[p]));
        v.first = slots_divergence(c, slots, ids, nullptr);
        v.steps_differing = v.first ? 1 : 0;
      }
      found.verdicts.push_back(v);
    }
    at_first_uncommon.resize(positions.size());
    caused.assign(positions.size(), false);
    if (with_root_causes) {
      for (std::size_t i = 1; i < positions.size(); ++i) {
        if (auto c = initial_root_cause(*traces[positions[0]], *traces[positions[i]])) {
          causes.emplace_back(ids[i], std::move(*c));
          caused[i] = true;
        }
      }
    }
  }

  void per_run(const std::vector<const trace::StepRecord*>& records) {
    for (std::size_t k = 0; k < traces.size(); ++k) {
      const trace::StepRecord* r = records[k];
      if (r == nullptr) continue;
      ++found.step_counts[k];
      found.series.losses[k].push_back(std::bit_cast<float>(r->loss_bits));
      // The chain first, then the step's parts: fold() without a copy, on the hot path.
      parts.assign(1, outcome_chain[k]);
      outcome_parts(*r, parts);
      outcome_chain[k] = digest_of(parts);
      parts[0] = content_chain[k];  // the content covers the outcome's parts too
      content_parts(*r, parts);
      content_chain[k] = digest_of(parts);
    }
  }

  // One category at a common step: per slot whether a compared run differs there.
  bool compare_category(Category c, const std::vector<const trace::StepRecord*>& runs,
                        bool per_category) {
    category_values(c, *runs[0], per_category, ref_values);
    differs.assign(ref_values.size(), 0);
    bool any = false;
    for (std::size_t i = 1; i < runs.size(); ++i) {
      category_values(c, *runs[i], per_category, other_values);
      for (std::size_t k = 0; k < ref_values.size(); ++k) {
        if (other_values[k] != ref_values[k]) differs[k] = 1, any = true;
      }
    }
    return any;
  }

  // The rows of the map, a tensor each (the header's names: step 0 may hold one digest per
  // category), and how many each category has.
  void add_rows() {
    const trace::TraceHeader& h = traces[positions[0]]->header;
    for (Category c : kCategories) {
      if (c == Category::initial_weights) continue;
      const std::vector<std::string> names = slot_names(c, h);
      rows_of.push_back(names.size());
      for (const std::string& name : names) found.series.rows.push_back({c, name, {}});
    }
  }

  void common_step(const std::vector<const trace::StepRecord*>& runs) {
    if (next_step == 0) add_rows();
    // A step some run recorded per category compares gradients, weights and buffers as one
    // digest each; the map's rows of such a category then all show its one verdict.
    const bool per_category = std::any_of(
        runs.begin(), runs.end(), [](const trace::StepRecord* r) { return !r->per_tensor; });
    losses(runs);  // first: it opens the step's epoch, whose weights_differing the weights set
    std::size_t row = 0, category = 0;
    for (Category c : kCategories) {
      if (c == Category::initial_weights) continue;
      const bool any = compare_category(c, runs, per_category);
      const std::size_t rows = rows_of[category++];
      for (std::size_t k = 0; k < rows; ++k) {
        const char d = differs.size() == rows ? differs[k] : differs.empty() ? 0 : differs[0];
        found.series.rows[row++].differs.push_back(d != 0);
      }
      if (c == Category::weights && !found.epochs.empty()) {
        found.epochs.back().weights_differing =
            per_category && has_levels_of_detail(c)
                ? std::nullopt
                : std::optional<int>(
                      static_cast<int>(std::count(differs.begin(), differs.end(), 1)));
      }
      if (!any || std::find(categories.begin(), categories.end(), c) == categories.end()) continue;
      CategoryVerdict& v = verdict(c);
      ++v.steps_differing;
      if (!v.first) {
        std::vector<std::vector<Slot>> slots;
        const trace::TraceHeader& h = traces[positions[0]]->header;
        const bool combined = per_category && has_levels_of_detail(c);
        for (const trace::StepRecord* r : runs) {
          slots.push_back(combined ? std::vector<Slot>{{"", combined_digest(c, *r)}}
                                   : step_slots(c, h, *r));
        }
        v.first = slots_divergence(c, slots, ids, runs[0]);
        if (v.first && combined) {
          v.first->per_category = true;
          v.first->tensor_digests = to_string(h.tensor_digests.value_or(trace::TensorDigestPlan{}));
        }
        if (c == Category::batches) {
          found.reference_indices_at_batches_divergence = runs[0]->batch_indices;
        }
      }
    }
    if (with_root_causes) root_causes(runs);
  }

  void losses(const std::vector<const trace::StepRecord*>& runs) {
    const float ref = std::bit_cast<float>(runs[0]->loss_bits);
    if (found.epochs.empty() || found.epochs.back().epoch != runs[0]->epoch) {
      EpochLosses e;
      e.epoch = runs[0]->epoch;
      found.epochs.push_back(e);
    }
    EpochLosses& e = found.epochs.back();
    e.last_step = next_step;
    std::optional<LossDifference> worst;
    for (std::size_t i = 1; i < runs.size(); ++i) {
      const float other = std::bit_cast<float>(runs[i]->loss_bits);
      const std::uint64_t ulp = ulp_distance(ref, other);
      e.max_abs_loss_difference =
          std::max(e.max_abs_loss_difference, std::abs(static_cast<double>(other) - ref));
      e.max_loss_ulp = std::max(e.max_loss_ulp, ulp);
      if (runs[i]->loss_bits == runs[0]->loss_bits || found.first_loss) continue;
      LossDifference d{next_step, ids[i], ref, other, ulp};
      if (!worst || d.ulp > worst->ulp) worst = d;
    }
    if (worst) found.first_loss = worst;
  }

  void root_causes(const std::vector<const trace::StepRecord*>& runs) {
    const trace::Trace& ref = *traces[positions[0]];
    for (std::size_t i = 1; i < runs.size(); ++i) {
      if (caused[i]) continue;
      if (auto c =
              step_root_cause(ref, ids[0], *runs[0], *traces[positions[i]], ids[i], *runs[i])) {
        causes.emplace_back(ids[i], std::move(*c));
        caused[i] = true;
        keep_cause_step(positions[0], *runs[0]);
        keep_cause_step(positions[i], *runs[i]);
      }
    }
  }

  void keep_cause_step(std::size_t position, const trace::StepRecord& r) {
    for (const auto& [p, kept] : found.cause_steps) {
      if (p == static_cast<int>(position) && kept.step == r.step) return;
    }
    found.cause_steps.emplace_back(static_cast<int>(position), r);
  }

  void uncommon_step(const std::vector<const trace::StepRecord*>& runs) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i] != nullptr && !at_first_uncommon[i]) {
        at_first_uncommon[i] = StepPlace{runs[i]->step, runs[i]->epoch, runs[i]->batch};
      }
    }
  }

  void step_count_divergence() {
    if (positions.empty()) return;
    std::size_t longest = 0;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      if (found.step_counts[positions[i]] > found.step_counts[positions[longest]]) longest = i;
    }
    if (found.step_counts[positions[longest]] == found.common_steps) return;
    Divergence d;
    d.category = Category::steps;
    d.tensor = "steps";
    if (const auto& at = at_first_uncommon[longest]) {
      d.step = at->step;
      d.epoch = at->epoch;
      d.batch = at->batch;
    }
    const std::int64_t reference_steps = found.step_counts[positions[0]];
    for (std::size_t i = 1; i < positions.size(); ++i) {
      const std::int64_t steps = found.step_counts[positions[i]];
      if (steps == reference_steps) continue;
      d.runs_differing.push_back(ids[i]);
      d.detail += (d.detail.empty() ? "" : ", ") + ("run " + std::to_string(ids[i])) +
                  " ended after " + std::to_string(steps) + " steps";
    }
    d.detail += ", run " + std::to_string(ids[0]) + " after " + std::to_string(reference_steps);
    found.step_count = std::move(d);
  }
};

StepWalk::StepWalk(std::vector<const trace::Trace*> traces, std::vector<std::size_t> positions,
                   std::vector<int> ids, bool with_root_causes)
    : state_(std::make_unique<State>()) {
  state_->traces = std::move(traces);
  state_->positions = std::move(positions);
  state_->ids = std::move(ids);
  state_->with_root_causes = with_root_causes;
  state_->start();
}

StepWalk::~StepWalk() = default;

void StepWalk::add(const std::vector<const trace::StepRecord*>& records) {
  State& s = *state_;
  s.per_run(records);
  std::vector<const trace::StepRecord*> runs;
  runs.reserve(s.positions.size());
  for (std::size_t p : s.positions) runs.push_back(records[p]);
  const bool all = std::all_of(runs.begin(), runs.end(), [](auto* r) { return r != nullptr; });
  s.common = s.common && all && !runs.empty();
  if (s.common) {
    s.found.common_steps = s.next_step + 1;
    s.common_step(runs);
  } else {
    s.uncommon_step(runs);
  }
  ++s.next_step;
}

StepFindings StepWalk::finish() {
  State& s = *state_;
  if (s.positions.size() >= 2) s.step_count_divergence();
  for (CategoryVerdict& v : s.found.verdicts) v.identical = !v.first;
  if (s.positions.size() < 2) {
    s.found.epochs.clear();
    s.found.first_loss.reset();
  }
  for (std::size_t k = 0; k < s.traces.size(); ++k) {
    const trace::Trace& t = *s.traces[k];
    std::vector<Digest128> end;
    std::string lines;
    for (const trace::EpochRecord& e : t.epochs) lines += trace::epoch_line(e);
    if (t.final) {
      end.push_back(
          Digest128{t.final->final_loss_bits, static_cast<std::uint64_t>(t.final->steps)});
      end.insert(end.end(), t.final->weights.begin(), t.final->weights.end());
      end.insert(end.end(), t.final->buffers.begin(), t.final->buffers.end());
      lines += trace::end_line(t.header, *t.final);
    }
    s.found.outcomes.push_back(fold(s.outcome_chain[k], end));
    s.found.contents.push_back(fold(s.content_chain[k], {text_digest(lines)}));
  }
  s.found.root_causes = group_root_causes(std::move(s.causes));
  return std::move(s.found);
}

namespace {

// The walk over `traces` (the compared runs at `positions`): each trace's steps from memory, or
// from its file again when it holds none (Trace::steps_in_source).
StepFindings walk(const std::vector<const trace::Trace*>& traces,
                  std::vector<std::size_t> positions, const std::vector<int>& ids,
                  bool pair_ops = true) {
  const std::size_t n = traces.size();
  bool ops = false;
  std::vector<std::optional<trace::TraceReader>> readers(n);
  for (std::size_t k = 0; k < n; ++k) {
    ops = ops || traces[k]->header.trace_ops.has_value();
    if (traces[k]->steps_in_source) readers[k].emplace(traces[k]->source);
  }
  StepWalk walk(traces, std::move(positions), ids, ops && pair_ops);
  std::vector<trace::StepRecord> held(n);
  std::vector<const trace::StepRecord*> records(n);
  for (std::size_t s = 0;; ++s) {
    bool any = false;
    for (std::size_t k = 0; k < n; ++k) {
      const trace::Trace& t = *traces[k];
      if (readers[k]) {
        const bool more = (s == 0 || records[k] != nullptr) && readers[k]->next_step(held[k]);
        records[k] = more ? &held[k] : nullptr;
      } else {
        records[k] = s < t.steps.size() ? &t.steps[s] : nullptr;
      }
      any = any || records[k] != nullptr;
    }
    if (!any) break;
    walk.add(records);
  }
  for (std::size_t k = 0; k < n; ++k) {
    const trace::Trace& t = *traces[k];
    if (readers[k] && t.final && readers[k]->steps_read() != t.final->steps) {
      throw InputError(t.source + ": changed while it was compared: it held " +
                       std::to_string(t.final->steps) + " steps, now " +
                       std::to_string(readers[k]->steps_read()));
    }
  }
  return walk.finish();
}

}  // namespace

StepFindings walk_steps(const std::vector<trace::Trace>& traces, const ComparedRuns& compared,
                        bool pair_ops) {
  std::vector<const trace::Trace*> all;
  for (const trace::Trace& t : traces) all.push_back(&t);
  std::vector<std::size_t> positions;
  for (const trace::Trace* t : compared.traces) {
    positions.push_back(static_cast<std::size_t>(t - traces.data()));
  }
  return walk(all, std::move(positions), compared.ids, pair_ops);
}

StepFindings walk_compared(const ComparedRuns& compared) {
  std::vector<std::size_t> positions(compared.traces.size());
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = i;
  return walk(compared.traces, std::move(positions), compared.ids);
}

}  // namespace ra::compare::phases

// The phase functions over traces held in memory: each a walk over their steps.
namespace ra::compare::phases {

std::vector<CategoryVerdict> category_verdicts(const ComparedRuns& compared) {
  return walk_compared(compared).verdicts;
}

StepSeries step_series(const std::vector<trace::Trace>& traces, const ComparedRuns& compared) {
  return walk_steps(traces, compared).series;
}

std::optional<Divergence> step_count_divergence(const ComparedRuns& compared) {
  return walk_compared(compared).step_count;
}

std::vector<RootCause> root_causes(const ComparedRuns& compared) {
  return walk_compared(compared).root_causes;
}

}  // namespace ra::compare::phases
