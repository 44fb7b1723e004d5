// Two programs' traces aligned at every step of their op window (compare/program_alignment.h).
#include "compare/program_alignment.h"

#include <algorithm>

#include "compare/op_families.h"
#include "core/error.h"
#include "core/tensor.h"
#include "trace/op_window.h"
#include "trace/trace_reader.h"

namespace ra::compare {
namespace {

// "A (run-000.trace.jsonl)": a side as messages name it.
std::string side_name(const trace::Trace& t, const char* letter) {
  return t.source.empty() ? std::string(letter) : std::string(letter) + " (" + t.source + ")";
}

std::string first_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  std::string text;
  for (std::size_t i = 0; i < std::min(names.size(), kShown); ++i)
    text += (i ? ", " : "") + names[i];
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

std::vector<std::string> missing_from(const std::vector<trace::TensorInfo>& from,
                                      const std::vector<trace::TensorInfo>& in) {
  std::vector<std::string> out;
  for (const trace::TensorInfo& f : from) {
    const bool found = std::any_of(in.begin(), in.end(),
                                   [&](const trace::TensorInfo& i) { return i.name == f.name; });
    if (!found) out.push_back(f.name);
  }
  return out;
}

// The spine compares tensors by position (compare_categories.cpp), so the two programs' lists
// must be one list: the same names in the same order, each of one shape and dtype.
void check_names(const char* what, const std::string& option, const trace::Trace& a,
                 const trace::Trace& b, const std::vector<trace::TensorInfo>& in_a,
                 const std::vector<trace::TensorInfo>& in_b) {
  if (in_a == in_b) return;
  const std::vector<std::string> only_a = missing_from(in_a, in_b);
  const std::vector<std::string> only_b = missing_from(in_b, in_a);
  if (!only_a.empty() || !only_b.empty()) {
    throw InputError(std::string("the two programs' ") + what + "s do not pair up by name (" +
                     option + " pairs them by name): only in " + side_name(a, "A") + ": " +
                     (only_a.empty() ? "none" : first_names(only_a)) + "; only in " +
                     side_name(b, "B") + ": " + (only_b.empty() ? "none" : first_names(only_b)) +
                     "; name one program's modules and " + what + "s as the other's");
  }
  for (std::size_t i = 0; i < in_a.size(); ++i) {
    const trace::TensorInfo &x = in_a[i], &y = in_b[i];
    if (x.name != y.name) {
      throw InputError(std::string("the two programs' ") + what + "s are in another order: " +
                       std::to_string(i) + " is " + x.name + " in " + side_name(a, "A") + ", " +
                       y.name + " in " + side_name(b, "B") + "; register them in one order");
    }
    if (x != y) {
      throw InputError(std::string(what) + " " + x.name + " is " + x.dtype +
                       ra::to_string(x.shape) + " in " + side_name(a, "A") + " and " + y.dtype +
                       ra::to_string(y.shape) + " in " + side_name(b, "B") +
                       ": the programs' models differ");
    }
  }
}

// A trace's steps, from memory or from its file a record at a time.
class StepSource {
 public:
  explicit StepSource(const trace::Trace& t) : trace_(t) {
    if (t.steps_in_source) reader_.emplace(t.source);
  }
  const trace::StepRecord* next() {
    if (reader_) return reader_->next_step(held_) ? &held_ : nullptr;
    return next_ < trace_.steps.size() ? &trace_.steps[next_++] : nullptr;
  }

 private:
  const trace::Trace& trace_;
  std::optional<trace::TraceReader> reader_;
  trace::StepRecord held_;
  std::size_t next_ = 0;
};

std::vector<std::string> op_names(const std::vector<trace::OpRecord>& records, std::size_t begin,
                                  std::size_t end) {
  std::vector<std::string> out;
  for (std::size_t i = begin; i < std::min(end, begin + ProgramAlignment::kListedOps); ++i)
    out.push_back(records[i].op);
  return out;
}

// One side of a step as the alignment reads it: its records as recorded, or a view of them
// (compare/op_families.h; `other`: the other side's records of the step).
class Side {
 public:
  Side(const trace::StepRecord& step, const trace::StepRecord& other, OpReading reading)
      : step_(step) {
    if (reading == OpReading::engine) view_ = engine_view(step.ops);
    if (reading == OpReading::pytorch) view_ = pytorch_view(step.ops, other.ops);
  }
  const std::vector<trace::OpRecord>& ops() const { return view_ ? view_->ops : step_.ops; }
  std::size_t fused() const { return view_ ? view_->fused : 0; }
  std::size_t left_out() const { return view_ ? view_->left_out : 0; }
  // The step's record where op k begins (the step's record count past the last op).
  std::size_t record_of(std::size_t k) const {
    if (!view_) return k;
    return k < view_->sources.size() ? view_->sources[k].records.front() : step_.ops.size();
  }
  // The record whose outputs op k's are; the records it was read from and their op names, when
  // several; the positions of its outputs in that record, when a view chose them.
  void describe(std::size_t k, std::size_t& outputs_of, std::vector<std::size_t>& records,
                std::vector<std::string>& names, std::vector<std::size_t>& outputs) const {
    outputs_of = k;
    if (!view_) return;
    const ViewedOp& v = view_->sources[k];
    outputs_of = v.outputs_of;
    outputs = v.outputs;
    if (v.records.size() < 2) return;
    records = v.records;
    for (std::size_t r : v.records) names.push_back(step_.ops[r].op);
  }

 private:
  const trace::StepRecord& step_;
  std::optional<StepView> view_;
};

StretchSummary stretch_summary(std::int64_t step, const Side& a, const Side& b,
                               const OpStretch& s) {
  return {step,
          a.record_of(s.a_begin),
          s.a_count(),
          b.record_of(s.b_begin),
          s.b_count(),
          layers_of(a.ops(), s.a_begin, s.a_end),
          layers_of(b.ops(), s.b_begin, s.b_end),
          op_names(a.ops(), s.a_begin, s.a_end),
          op_names(b.ops(), s.b_begin, s.b_end)};
}

PartingSummary parting_of(std::int64_t step, const Side& a, const Side& b,
                          const StepAlignment& aligned) {
  const OpParting& p = *aligned.parting;
  PartingSummary out;
  out.step = step;
  out.kind = p.kind;
  out.a = a.ops()[p.a];
  out.b = b.ops()[p.b];
  out.occurrence = occurrence_of(a.ops(), p.a);
  out.positions = p.positions;
  if (p.stretch) out.stretch = stretch_summary(step, a, b, aligned.stretches[*p.stretch]);
  a.describe(p.a, out.a_index, out.a_records, out.a_run, out.a_outputs);
  b.describe(p.b, out.b_index, out.b_records, out.b_run, out.b_outputs);
  return out;
}

// What one step's alignment adds to the programs'.
void add_step(const trace::StepRecord& a, const trace::StepRecord& b, ProgramAlignment& out) {
  const Side side_a(a, b, out.a_reading), side_b(b, a, out.b_reading);
  out.fused += side_a.fused() + side_b.fused();
  out.left_out += side_a.left_out() + side_b.left_out();
  const StepAlignment aligned = align_ops(a.step, side_a.ops(), side_b.ops());
  out.steps.push_back({a.step, a.ops.size(), b.ops.size(), aligned.aligned, aligned.unaligned()});
  for (const OpStretch& st : aligned.stretches) {
    if (st.aligned) continue;
    ++out.stretches_total;
    if (out.stretches.size() < ProgramAlignment::kListedStretches)
      out.stretches.push_back(stretch_summary(a.step, side_a, side_b, st));
  }
  if (!out.parting && aligned.parting) out.parting = parting_of(a.step, side_a, side_b, aligned);
}

bool is_pytorch(const trace::Trace& t) {
  return t.header.backend.starts_with("pytorch");
}

// The engine's model layers must be among the PyTorch run's layers, or no op of theirs aligns.
void check_layers_pair_up(const ProgramAlignment& al, const trace::StepRecord& a,
                          const trace::StepRecord& b) {
  const bool engine_a = al.a_reading == OpReading::engine;
  const trace::StepRecord &engine = engine_a ? a : b, &pytorch = engine_a ? b : a;
  const std::vector<std::string> missing = engine_layers_missing(engine.ops, pytorch.ops);
  if (missing.empty()) return;
  std::vector<std::string> modules;
  for (const trace::OpRecord& r : pytorch.ops) {
    const bool place = r.layer == "script" || r.layer == "autograd" || r.layer == "optimizer";
    if (!place && std::find(modules.begin(), modules.end(), r.layer) == modules.end())
      modules.push_back(r.layer);
  }
  throw InputError(
      "the engine's layers do not pair up with the PyTorch run's modules (--align pairs ops by "
      "layer): only in the engine (" +
      std::string(engine_a ? "A" : "B") + "): " + first_names(missing) +
      "; the PyTorch run's modules (" + (engine_a ? "B" : "A") +
      "): " + (modules.empty() ? "none" : first_names(modules)) +
      "; record the PyTorch run under the engine's layer names: repro_audit.record(model, "
      "optimizer, layers={\"model.0\": \"conv2d_0\", ...}) (docs/equivalence.md, \"The engine "
      "against PyTorch\")");
}

}  // namespace

void check_alignable(const std::vector<trace::Trace>& traces) {
  if (traces.size() != 2 && traces.size() != 3) {
    throw InputError(
        "--align compares two traces, one of each program, and optionally A's "
        "perturbed run as its control: " +
        std::to_string(traces.size()) + " given");
  }
  const trace::Trace &a = traces[0], &b = traces[1];
  if (traces.size() == 3) check_alignment_control(a, traces[2]);
  for (const trace::Trace* t : {&a, &b}) {
    if (!t->header.trace_ops) {
      throw InputError(t->source +
                       " has no op records, so its ops cannot be aligned: record "
                       "each program with --trace-ops (exec --trace-ops 0 records step 0's)");
    }
  }
  if (*a.header.trace_ops != *b.header.trace_ops) {
    throw InputError(
        "op windows at different steps: " + side_name(a, "A") + " recorded ops with --trace-ops " +
        trace::to_string(*a.header.trace_ops) + ", " + side_name(b, "B") + " with --trace-ops " +
        trace::to_string(*b.header.trace_ops) + ": record both programs with one window");
  }
  check_programs_pair_up(a, b, "--align");
}

void check_alignment_control(const trace::Trace& a, const trace::Trace& control) {
  const trace::TraceHeader &h = control.header, &ha = a.header;
  if (!h.perturbation || h.spec_digest != ha.spec_digest || h.params != ha.params) {
    throw InputError(control.source +
                     ": the third trace of --align is the control, a perturbed run of A (exec "
                     "--seeds all with A's command; the same spec, one bit of one initial "
                     "weight flipped), and this is none");
  }
  if (h.trace_ops != ha.trace_ops) {
    throw InputError(control.source +
                     ": the control must record the ops of A's op window (--trace-ops " +
                     (ha.trace_ops ? trace::to_string(*ha.trace_ops) : std::string("none")) + ")");
  }
}

void check_programs_pair_up(const trace::Trace& a, const trace::Trace& b,
                            const std::string& option) {
  check_names("parameter", option, a, b, a.header.params, b.header.params);
  check_names("buffer", option, a, b, a.header.buffers, b.header.buffers);
}

ProgramAlignment align_programs(const trace::Trace& a, const trace::Trace& b) {
  ProgramAlignment out;
  if (is_pytorch(a) != is_pytorch(b)) {
    out.a_reading = is_pytorch(a) ? OpReading::pytorch : OpReading::engine;
    out.b_reading = is_pytorch(b) ? OpReading::pytorch : OpReading::engine;
  }
  const trace::OpWindow window = a.header.trace_ops.value_or(trace::OpWindow{});
  StepSource steps_a(a), steps_b(b);
  while (const trace::StepRecord* ra = steps_a.next()) {
    const trace::StepRecord* rb = steps_b.next();
    if (!rb || (window.last && ra->step >= *window.last)) break;
    if (!ra->ops_recorded || !rb->ops_recorded) continue;
    if (out.steps.empty() && out.a_reading != OpReading::as_recorded)
      check_layers_pair_up(out, *ra, *rb);
    add_step(*ra, *rb, out);
  }
  if (out.steps.empty()) {
    throw InputError("no step of the op window " + trace::to_string(window) +
                     " was recorded by both " + side_name(a, "A") + " and " + side_name(b, "B") +
                     ": their runs ended before it (compare their step counts)");
  }
  return out;
}

}  // namespace ra::compare
