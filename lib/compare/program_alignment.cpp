// Two programs' traces aligned at every step of their op window (compare/program_alignment.h).
#include "compare/program_alignment.h"

#include <algorithm>

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

StretchSummary stretch_summary(const trace::StepRecord& a, const trace::StepRecord& b,
                               const OpStretch& s) {
  return {a.step,
          s.a_begin,
          s.a_count(),
          s.b_begin,
          s.b_count(),
          layers_of(a.ops, s.a_begin, s.a_end),
          layers_of(b.ops, s.b_begin, s.b_end),
          op_names(a.ops, s.a_begin, s.a_end),
          op_names(b.ops, s.b_begin, s.b_end)};
}

PartingSummary parting_of(const trace::StepRecord& a, const trace::StepRecord& b,
                          const StepAlignment& aligned) {
  const OpParting& p = *aligned.parting;
  PartingSummary out{
      a.step,      p.kind,      p.a, p.b, a.ops[p.a], b.ops[p.b], occurrence_of(a.ops, p.a),
      p.positions, std::nullopt};
  if (p.stretch) out.stretch = stretch_summary(a, b, aligned.stretches[*p.stretch]);
  return out;
}

// What one step's alignment adds to the programs'.
void add_step(const trace::StepRecord& a, const trace::StepRecord& b, ProgramAlignment& out) {
  const StepAlignment aligned = align_step(a, b);
  out.steps.push_back(
      {a.step, aligned.a_records, aligned.b_records, aligned.aligned, aligned.unaligned()});
  for (const OpStretch& s : aligned.stretches) {
    if (s.aligned) continue;
    ++out.stretches_total;
    if (out.stretches.size() < ProgramAlignment::kListedStretches)
      out.stretches.push_back(stretch_summary(a, b, s));
  }
  if (!out.parting && aligned.parting) out.parting = parting_of(a, b, aligned);
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
  const trace::OpWindow window = a.header.trace_ops.value_or(trace::OpWindow{});
  StepSource steps_a(a), steps_b(b);
  while (const trace::StepRecord* ra = steps_a.next()) {
    const trace::StepRecord* rb = steps_b.next();
    if (!rb || (window.last && ra->step >= *window.last)) break;
    if (ra->ops_recorded && rb->ops_recorded) add_step(*ra, *rb, out);
  }
  if (out.steps.empty()) {
    throw InputError("no step of the op window " + trace::to_string(window) +
                     " was recorded by both " + side_name(a, "A") + " and " + side_name(b, "B") +
                     ": their runs ended before it (compare their step counts)");
  }
  return out;
}

}  // namespace ra::compare
