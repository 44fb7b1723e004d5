// The op alignment of two programs (compare/checks.h; docs/equivalence.md, "Aligning two
// programs' ops"): with --align, the two traces' op records at every step of their op window,
// aligned by (layer, op) (compare/program_alignment.h), and the first place where the programs
// part. Failed when they part there (an aligned op read equal inputs and wrote another output; an
// unaligned stretch made a value an aligned op then read otherwise; the step's inputs differ) or
// when the runs differ at all (their outcome classes: final loss, weights...); passed when every
// aligned op agreed and the runs agree to the bit, so the unaligned stretches ended in equal
// outputs.
#include <algorithm>

#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/parting_magnitude.h"
#include "compare/program_alignment.h"

namespace ra::compare {
namespace {

// "1st", "2nd", "3rd", "4th", ... "11th", "12th", "13th", "21st".
std::string ordinal(std::size_t n) {
  const std::size_t tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string layer_name(const trace::OpRecord& r) {
  return r.layer.empty() ? "(no layer)" : r.layer;
}

// "aten.addmm.default in model.head (its 1st there)".
std::string named(const trace::OpRecord& r, std::size_t occurrence) {
  return r.op + " in " + layer_name(r) + " (its " + ordinal(occurrence + 1) + " there)";
}

// One side of a stretch: "9 ops in model.norm: aten.mean.dim, aten.sub.Tensor, ... (+3 more)",
// with at most `shown` op names.
std::string side_text(std::size_t count, const std::string& layers,
                      const std::vector<std::string>& ops, std::size_t shown) {
  if (count == 0) return "-";
  std::string text = plural(count, "op", "ops") + " in " + layers + ":";
  shown = std::min(shown, ops.size());
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : " ") + ops[i];
  if (count > shown) text += " (+" + std::to_string(count - shown) + " more)";
  return text;
}

std::string stretch_text(const StretchSummary& s) {
  constexpr std::size_t kAll = ProgramAlignment::kListedOps;
  return "only in A: " + side_text(s.a_count, s.a_layers, s.a_ops, kAll) +
         "; only in B: " + side_text(s.b_count, s.b_layers, s.b_ops, kAll);
}

// "model.norm", or "model.norm / model.block" where the two sides ran in other layers.
std::string stretch_layers(const StretchSummary& s) {
  if (s.b_layers.empty() || s.b_layers == s.a_layers) return s.a_layers;
  if (s.a_layers.empty()) return s.b_layers;
  return s.a_layers + " / " + s.b_layers;
}

// "output 0 (f32[8,64])": positions of a record's inputs or outputs, with their types.
std::string positions_text(const char* what, const std::vector<std::size_t>& positions,
                           const std::vector<std::string>& types) {
  std::string text;
  for (std::size_t p : positions) {
    text += (text.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(p);
    if (p < types.size()) text += " (" + types[p] + ")";
  }
  return text;
}

// The types of the aligned ops' outputs (or inputs): A's, or B's where A's records have none (the
// engine's).
const std::vector<std::string>& types_of(const PartingSummary& p, bool outputs) {
  const std::vector<std::string>& a = outputs ? p.a.out_types : p.a.in_types;
  return a.empty() ? (outputs ? p.b.out_types : p.b.in_types) : a;
}

std::string parting_summary(const PartingSummary& p) {
  const std::string step = "at step " + std::to_string(p.step);
  const std::string op = named(p.a, p.occurrence);
  switch (p.kind) {
    case OpParting::Kind::op:
      if (p.a.op == "batch" && p.a.in.empty()) {  // the engine's pseudo-op: no kernel
        return "the programs part " + step +
               " in their batch (the data order or the data read), "
               "before any op";
      }
      return "the programs part " + step + " in " + layer_name(p.a) + ": its " +
             ordinal(p.occurrence + 1) + " " + p.a.op +
             " read the same inputs in both and wrote another " +
             positions_text("output", p.positions, types_of(p, true));
    case OpParting::Kind::stretch:
      return "the programs part " + step + " in " + stretch_layers(*p.stretch) +
             ", in ops only one of them runs there (" + std::to_string(p.stretch->a_count) +
             " in A, " + std::to_string(p.stretch->b_count) + " in B): the next aligned op, " +
             p.a.op + " in " + p.a.layer + ", reads another value";
    case OpParting::Kind::inputs:
      break;
  }
  return "the programs part " + step + " before their ops do: " + op + " reads another " +
         positions_text("input", p.positions, types_of(p, false)) +
         ", made by no op only one program ran (the step's batch or weights differ, or the "
         "programs call the op otherwise)";
}

struct Totals {
  std::size_t a = 0, b = 0, aligned = 0;
};

Totals totals_of(const ProgramAlignment& al) {
  Totals t;
  for (const StepSummary& s : al.steps) {
    t.a += s.a_records;
    t.b += s.b_records;
    t.aligned += s.aligned;
  }
  return t;
}

std::string alignment_summary(const ProgramAlignment& al, const ComparisonResult& r) {
  if (al.parting) return parting_summary(*al.parting);
  const std::string steps = plural(al.steps.size(), "step", "steps") + " of the op window";
  if (!r.identity.identical) {
    std::string where;
    if (const std::optional<Divergence>& d = r.first_divergence) {
      where = ": first in " + std::string(to_string(d->category)) +
              (d->step ? " at step " + std::to_string(*d->step) : std::string(" (initial)"));
    }
    return "every aligned op agreed at the " + steps + ", but the runs differ" + where;
  }
  if (al.stretches_total == 0)
    return "every op aligned and agreed at the " + steps + ", and the runs agree to the bit";
  return "every aligned op agreed at the " + steps + " and the runs agree to the bit: the " +
         plural(al.stretches_total, "unaligned stretch", "unaligned stretches") +
         " ended in equal outputs";
}

// "record 7 of step 0, aten.addmm.default in model.head", or for an op read from a run of
// records (the engine against PyTorch) "records 4, 5 of step 0, aten.convolution.default +
// aten.relu.default in conv2d_0 (read as conv2d.forward)".
std::string records_text(const PartingSummary& p, const trace::OpRecord& r, std::size_t index,
                         const std::vector<std::size_t>& records,
                         const std::vector<std::string>& run) {
  const std::string step = " of step " + std::to_string(p.step) + ", ";
  if (records.empty())
    return "record " + std::to_string(index) + step + r.op + " in " + layer_name(r);
  std::string numbers, names;
  for (std::size_t k = 0; k < records.size(); ++k) {
    numbers += (k ? ", " : "") + std::to_string(records[k]);
    names += (k ? " + " : "") + run[k];
  }
  return "records " + numbers + step + names + " in " + layer_name(r) + " (read as " + r.op + ")";
}

std::vector<std::string> parting_details(const PartingSummary& p) {
  const auto record = [&](const char* program, const trace::OpRecord& r, std::size_t index) {
    const bool a = program[0] == 'A';
    std::string line =
        std::string(program) + ": " +
        records_text(p, r, index, a ? p.a_records : p.b_records, a ? p.a_run : p.b_run);
    if (p.kind == OpParting::Kind::op) {
      line += ", " + positions_text("output", p.positions, r.out_types) + " " +
              (p.positions.size() == 1 ? "differs" : "differ");
    } else {
      line += ", reads " + positions_text("input", p.positions, r.in_types);
    }
    return line;
  };
  std::vector<std::string> out = {record("A", p.a, p.a_index), record("B", p.b, p.b_index)};
  if (p.stretch) out.push_back("the stretch where they part: " + stretch_text(*p.stretch));
  return out;
}

const char* reading_name(OpReading r) {
  return r == OpReading::engine ? "engine" : r == OpReading::pytorch ? "pytorch" : "as recorded";
}

// The first lines of the details: what was aligned.
std::vector<std::string> aligned_lines(const ProgramAlignment& al) {
  const Totals t = totals_of(al);
  const std::string steps = plural(al.steps.size(), "step", "steps");
  const std::string stretches =
      plural(al.stretches_total, "unaligned stretch", "unaligned stretches");
  if (al.a_reading == OpReading::as_recorded) {
    return {"aligned by (layer, op) at " + steps + ": " + std::to_string(t.aligned) + " of A's " +
            std::to_string(t.a) + " op records paired with " + std::to_string(t.aligned) +
            " of B's " + std::to_string(t.b) + "; " + stretches};
  }
  const bool engine_a = al.a_reading == OpReading::engine;
  return {"aligned by (layer, op) at " + steps + ", each program's records read as the engine's " +
              "ops: " + std::to_string(t.aligned) + " pairs, of A's " + std::to_string(t.a) +
              " op records and B's " + std::to_string(t.b) + "; " + stretches,
          std::string("the engine (") + (engine_a ? "A" : "B") + ") against PyTorch (" +
              (engine_a ? "B" : "A") +
              "): " + plural(al.fused, "run of PyTorch ops", "runs of PyTorch ops") +
              " read as one engine op each (a convolution and its relu as conv2d.forward), " +
              plural(al.left_out, "record", "records") +
              " that only pass a value on (detach, view) left out; the op families: "
              "docs/equivalence.md, \"The engine against PyTorch\""};
}

std::vector<std::string> details_of(const ProgramAlignment& al, const ComparisonResult& r,
                                    const std::vector<std::string>& magnitude) {
  const Totals t = totals_of(al);
  std::vector<std::string> out = aligned_lines(al);
  if (t.aligned == 0) out.push_back("no op aligned: the programs share no (layer, op)");
  if (al.parting) {
    for (std::string& line : parting_details(*al.parting)) out.push_back(std::move(line));
    out.insert(out.end(), magnitude.begin(), magnitude.end());
  } else if (!r.identity.identical) {
    out.push_back(
        "the op records do not show where: the value that differs is made by an "
        "unaligned stretch no aligned op reads, or outside the recorded ops (or after "
        "the op window)");
  }
  out.push_back(
      "digests are of each tensor's elements in logical order: a transposed view and "
      "its contiguous copy digest alike, so a difference of memory layout alone is none");
  return out;
}

nlohmann::json stretch_json(const StretchSummary& s) {
  const auto one = [](std::size_t begin, std::size_t count, const std::string& layers,
                      const std::vector<std::string>& ops) {
    return nlohmann::json{{"begin", begin}, {"count", count}, {"layers", layers}, {"ops", ops}};
  };
  return {{"step", s.step},
          {"a", one(s.a_begin, s.a_count, s.a_layers, s.a_ops)},
          {"b", one(s.b_begin, s.b_count, s.b_layers, s.b_ops)}};
}

nlohmann::json parting_json(const std::optional<PartingSummary>& p) {
  if (!p) return nullptr;
  const char* kinds[] = {"op", "stretch", "inputs"};
  return {{"step", p->step},
          {"kind", kinds[static_cast<int>(p->kind)]},
          {"op", p->a.op},
          {"layer", p->a.layer},
          {"occurrence", p->occurrence},
          {"record_a", p->a_index},
          {"record_b", p->b_index},
          {"positions", p->positions},
          {"types", types_of(*p, p->kind == OpParting::Kind::op)},
          {"stretch", p->stretch ? stretch_json(*p->stretch) : nlohmann::json(nullptr)},
          {"records_a", p->a_records},
          {"records_b", p->b_records},
          {"run_a", p->a_run},
          {"run_b", p->b_run}};
}

nlohmann::json data_of(const ProgramAlignment& al, const CheckContext& c) {
  nlohmann::json steps = nlohmann::json::array(), stretches = nlohmann::json::array();
  for (const StepSummary& s : al.steps) {
    steps.push_back({{"step", s.step},
                     {"records_a", s.a_records},
                     {"records_b", s.b_records},
                     {"aligned", s.aligned},
                     {"unaligned_stretches", s.unaligned}});
  }
  for (const StretchSummary& s : al.stretches) stretches.push_back(stretch_json(s));
  return {{"traces", {c.traces[0].source, c.traces[1].source}},
          {"reading", {reading_name(al.a_reading), reading_name(al.b_reading)}},
          {"fused", al.fused},
          {"left_out", al.left_out},
          {"steps", steps},
          {"parting", parting_json(al.parting)},
          {"stretches", stretches},
          {"stretches_total", al.stretches_total},
          {"runs_identical", c.result.identity.identical}};
}

// The control of an alignment that finds no parting (DESIGN.md: a verdict of identity holds only
// when a control that should fail is seen to fail): A's perturbed run, the third trace, aligned
// with A must part from it.
struct AlignmentControl {
  bool given = false, seen = false;
  std::string line;
  nlohmann::json data;
};

AlignmentControl alignment_control(const CheckContext& c) {
  AlignmentControl out;
  if (c.traces.size() < 3) {
    out.line =
        "no control: name A's perturbed run (exec --seeds all with A's command and op window) as "
        "a third trace, and the alignment must see it part from A";
    return out;
  }
  const trace::Trace& control = c.traces[2];
  const ProgramAlignment al = align_programs(c.traces[0], control);
  out.given = true;
  out.seen = al.parting.has_value();
  out.data = {{"trace", control.source}, {"parted", out.seen}};
  if (!out.seen) {
    out.line = "the control: A's perturbed run (" + control.source +
               ") aligned with A parts nowhere in the op window";
    return out;
  }
  out.data["step"] = al.parting->step;
  out.data["op"] = al.parting->a.op;
  out.data["layer"] = al.parting->a.layer;
  out.line = "the control: A's perturbed run (" + control.source + ") aligned with A parts at " +
             "step " + std::to_string(al.parting->step) + ", " + al.parting->a.op + " in " +
             layer_name(al.parting->a) + ": the alignment sees a one-bit change";
  return out;
}

}  // namespace

bool program_alignment_applies(const CheckContext& c) {
  return c.options.align;
}

Finding program_alignment(const CheckContext& c) {
  constexpr std::size_t kTableRows = 20;
  const ProgramAlignment al = align_programs(c.traces.at(0), c.traces.at(1));
  const AlignmentControl control = alignment_control(c);
  Finding f;
  f.name = "op alignment";
  const bool parted = al.parting || !c.result.identity.identical;
  f.outcome = parted                           ? CheckOutcome::failed
              : control.given && !control.seen ? CheckOutcome::inconclusive
                                               : CheckOutcome::passed;
  f.summary = f.outcome == CheckOutcome::inconclusive
                  ? "every aligned op agreed, but the control, A's perturbed run, did not part "
                    "from A: nothing shows the alignment could see a one-bit difference"
                  : alignment_summary(al, c.result);
  const PartingMagnitude magnitude =
      al.parting ? parting_magnitude(*al.parting, c) : PartingMagnitude{};
  f.details = details_of(al, c.result, magnitude.lines);
  if (!parted || control.given) f.details.push_back(control.line);
  f.table.columns = {"step", "module", "only in A", "only in B"};
  for (std::size_t i = 0; i < std::min(al.stretches.size(), kTableRows); ++i) {
    const StretchSummary& s = al.stretches[i];
    const auto cell = [](std::size_t count, const std::vector<std::string>& ops) {
      if (count == 0) return std::string("-");
      std::string text = std::to_string(count) + ":";
      for (std::size_t k = 0; k < std::min<std::size_t>(ops.size(), 3); ++k)
        text += (k ? ", " : " ") + ops[k];
      return count > 3 ? text + ", ..." : text;
    };
    f.table.rows.push_back({std::to_string(s.step), stretch_layers(s), cell(s.a_count, s.a_ops),
                            cell(s.b_count, s.b_ops)});
  }
  if (al.stretches_total > f.table.rows.size()) {
    f.details.push_back(std::to_string(al.stretches_total - f.table.rows.size()) +
                        " more unaligned stretches than the table shows: the JSON data lists "
                        "the first " +
                        std::to_string(ProgramAlignment::kListedStretches));
  }
  f.data = data_of(al, c);
  f.data["control"] = control.data;
  if (al.parting) f.data["parting"]["magnitude"] = magnitude.data;
  return f;
}

}  // namespace ra::compare
