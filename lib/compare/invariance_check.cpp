// Batch invariance from a sweep (compare/invariance_check.h).
#include "compare/invariance_check.h"

#include <algorithm>
#include <map>

namespace ra::compare {
namespace {

using trace::InvarianceOp;
using trace::InvarianceProbe;

bool same_row(const std::optional<trace::RowDigest>& a, const std::optional<trace::RowDigest>& b) {
  return a.has_value() == b.has_value() && (!a || a->digest == b->digest);
}

bool same_inputs(const InvarianceOp& a, const InvarianceOp& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i].digest != b.inputs[i].digest) return false;
  }
  return true;
}

// The first op where `probe` parts from `ref`: another op in the sequence, or an op that read the
// reference's rows and wrote another row. Ops whose inputs already differ follow an earlier part
// (through a tensor without the batch dimension) and are passed over.
std::optional<FirstBreak> first_break(const InvarianceProbe& ref, const InvarianceProbe& probe) {
  const std::size_t common = std::min(ref.ops.size(), probe.ops.size());
  for (std::size_t i = 0; i < common; ++i) {
    const InvarianceOp& r = ref.ops[i];
    const InvarianceOp& p = probe.ops[i];
    if (r.op != p.op) return FirstBreak{static_cast<int>(i), r.op, r.module, false, p.op};
    if (same_inputs(r, p) && !same_row(r.output, p.output)) {
      return FirstBreak{static_cast<int>(i), r.op, r.module, true, ""};
    }
  }
  if (ref.ops.size() == probe.ops.size()) return std::nullopt;
  const bool ref_longer = ref.ops.size() > probe.ops.size();
  const InvarianceOp& extra = ref_longer ? ref.ops[common] : probe.ops[common];
  return FirstBreak{static_cast<int>(common), ref_longer ? extra.op : "(none)",
                    ref_longer ? extra.module : "", false, ref_longer ? "(none)" : extra.op};
}

ProbeOutcome probe_outcome(const InvarianceProbe& ref, const InvarianceProbe& probe) {
  ProbeOutcome o;
  o.config = probe.config;
  o.equal = probe.output_digest == ref.output_digest;
  o.first_break = first_break(ref, probe);
  if (!o.equal && !ref.output_values.empty() &&
      probe.output_values.size() == ref.output_values.size()) {
    o.difference = compare_values(ref.output_values, probe.output_values);
  }
  return o;
}

// The probe of the control's batch without the change: the same size, row and neighbours.
const InvarianceProbe& control_twin(const trace::InvarianceSweep& sweep,
                                    const InvarianceProbe& control) {
  for (const InvarianceProbe& p : sweep.probes) {
    const trace::ProbeConfig& c = p.config;
    if (!c.control && c.batch_size == control.config.batch_size &&
        c.anchor_row == control.config.anchor_row && c.neighbours == control.config.neighbours) {
      return p;
    }
  }
  return sweep.reference;
}

ControlOutcome control_outcome(const trace::InvarianceSweep& sweep) {
  ControlOutcome out;
  if (!sweep.control) return out;
  out.op = *sweep.control;
  const auto control = std::find_if(sweep.probes.begin(), sweep.probes.end(),
                                    [](const InvarianceProbe& p) { return p.config.control; });
  if (control == sweep.probes.end()) return out;
  out.ran = true;
  out.config = control->config;
  const InvarianceProbe& twin = control_twin(sweep, *control);
  const auto at = static_cast<std::size_t>(out.op.op_index);
  if (at < control->ops.size() && at < twin.ops.size() && control->ops[at].op == twin.ops[at].op) {
    out.detected = !same_row(control->ops[at].output, twin.ops[at].output);
  }
  out.reached_output = control->output_digest != twin.output_digest;
  return out;
}

std::vector<OpBreaks> breaking_ops(const std::vector<ProbeOutcome>& probes) {
  std::map<int, OpBreaks> by_op;
  for (const ProbeOutcome& p : probes) {
    if (!p.first_break || !p.first_break->output_differs) continue;
    OpBreaks& b = by_op[p.first_break->op_index];
    b.op_index = p.first_break->op_index;
    b.op = p.first_break->op;
    b.module = p.first_break->module;
    ++b.probes;
  }
  std::vector<OpBreaks> out;
  for (auto& [index, b] : by_op) out.push_back(b);
  std::stable_sort(out.begin(), out.end(),
                   [](const OpBreaks& a, const OpBreaks& b) { return a.probes > b.probes; });
  return out;
}

}  // namespace

InvarianceAnalysis analyse_invariance(const trace::InvarianceSweep& sweep) {
  InvarianceAnalysis a;
  a.source = sweep.source;
  a.model = sweep.model;
  a.mode = sweep.mode;
  a.device = sweep.device;
  a.dtype = sweep.dtype;
  a.reference_ops = static_cast<int>(sweep.reference.ops.size());
  for (const InvarianceProbe& p : sweep.probes) {
    if (p.config.control) continue;
    a.probes.push_back(probe_outcome(sweep.reference, p));
    const ProbeOutcome& o = a.probes.back();
    if (o.equal) continue;
    a.invariant = false;
    if (!a.first_failing || o.config.batch_size < a.probes[*a.first_failing].config.batch_size) {
      a.first_failing = a.probes.size() - 1;
    }
  }
  a.control = control_outcome(sweep);
  a.breaking_ops = breaking_ops(a.probes);
  return a;
}

}  // namespace ra::compare
