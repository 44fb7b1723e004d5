// The batch-invariance finding (compare/invariance_finding.h): every report form's content of it,
// side by side.
#include "compare/invariance_finding.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

namespace ra::compare {
namespace {

using nlohmann::json;

// "aten.addmm.default in encoder.fc"; a Sequential's child is named by its index alone, so
// "in module 2" says what the number is.
std::string op_place(const std::string& op, const std::string& module) {
  if (module.empty()) return op;
  const bool index = module.find_first_not_of("0123456789") == std::string::npos;
  return op + (index ? " in module " : " in ") + module;
}

std::string probe_place(const trace::ProbeConfig& c) {
  return "batch size " + std::to_string(c.batch_size) + ", anchor " + c.position + " (row " +
         std::to_string(c.anchor_row) + ")" +
         (c.neighbours.empty() ? "" : ", neighbours " + c.neighbours);
}

std::string ulps_text(const ProbeOutcome& p) {
  if (!p.difference) return "no values kept";
  if (p.difference->max_ulp == std::numeric_limits<std::uint64_t>::max()) return "a NaN";
  return std::to_string(p.difference->max_ulp) + " ULP(s)";
}

std::string differing_text(const ProbeOutcome& p) {
  return p.difference ? std::to_string(p.difference->differing) : "?";
}

std::string break_text(const FirstBreak& b) {
  if (b.output_differs) {
    return op_place(b.op, b.module) + " (op " + std::to_string(b.op_index) +
           "): its anchor-row inputs were bitwise equal to the anchor alone's, its output row "
           "was not";
  }
  return "the op sequence parts at op " + std::to_string(b.op_index) + ": " + b.op +
         " for the anchor alone, " + b.probe_op + " in this batch (another kernel path)";
}

// "1-12, 16, 31-33": sorted distinct sizes as runs.
std::string size_ranges(std::set<int> sizes) {
  std::string out;
  for (auto it = sizes.begin(); it != sizes.end();) {
    int first = *it, last = *it;
    while (++it != sizes.end() && *it == last + 1) last = *it;
    out += (out.empty() ? "" : ", ") + std::to_string(first) +
           (last > first ? "-" + std::to_string(last) : "");
  }
  return out;
}

json break_json(const std::optional<FirstBreak>& b) {
  if (!b) return nullptr;
  json out{{"op_index", b->op_index},
           {"op", b->op},
           {"module", b->module},
           {"kind", b->output_differs ? "output_differs" : "op_sequence_differs"}};
  if (!b->output_differs) out["probe_op"] = b->probe_op;
  return out;
}

json probe_json(const ProbeOutcome& p) {
  return {{"batch_size", p.config.batch_size},
          {"anchor_row", p.config.anchor_row},
          {"position", p.config.position},
          {"neighbours", p.config.neighbours},
          {"equal", p.equal},
          {"differing_elements", p.difference ? json(p.difference->differing) : json(nullptr)},
          {"max_ulps", p.difference ? json(p.difference->max_ulp) : json(nullptr)},
          {"max_relative", p.difference ? json(p.difference->max_relative) : json(nullptr)},
          {"first_break", break_json(p.first_break)}};
}

json control_json(const ControlOutcome& c) {
  return {{"ran", c.ran},
          {"detected", c.detected},
          {"reached_output", c.reached_output},
          {"op_index", c.op.op_index},
          {"op", c.op.op},
          {"module", c.op.module},
          {"batch_size", c.config.batch_size},
          {"anchor_row", c.config.anchor_row}};
}

std::string control_text(const ControlOutcome& c) {
  if (c.op.op.empty()) return "no control ran: the producer injected no change";
  if (!c.ran) return "the control's probe is missing from the sweep";
  return "control: one ULP injected at " + op_place(c.op.op, c.op.module) + " (op " +
         std::to_string(c.op.op_index) + ") in a batch of " + std::to_string(c.config.batch_size) +
         ": " +
         (c.detected ? std::string("seen") + (c.reached_output ? ", and it reached the output"
                                                               : " (masked before the output)")
                     : "NOT seen, so an equal output proves nothing");
}

CheckOutcome invariance_outcome(const InvarianceAnalysis& a, const InvarianceFindingOptions& o) {
  if (!a.invariant) return o.expect_invariant ? CheckOutcome::failed : CheckOutcome::allowed;
  if (a.probes.empty() || !a.control.ran || !a.control.detected) return CheckOutcome::inconclusive;
  return CheckOutcome::passed;
}

std::string invariance_summary(const InvarianceAnalysis& a, CheckOutcome outcome) {
  const auto failing = static_cast<std::size_t>(std::count_if(
      a.probes.begin(), a.probes.end(), [](const ProbeOutcome& p) { return !p.equal; }));
  const std::string of = std::to_string(a.probes.size()) + " probe(s)";
  if (!a.invariant) {
    const ProbeOutcome& first = a.probes[*a.first_failing];
    return "NOT INVARIANT: the anchor's output depends on its batch in " + std::to_string(failing) +
           " of " + of + ", first at " + probe_place(first.config) + " (" + ulps_text(first) + ")" +
           (outcome == CheckOutcome::allowed ? "; allowed (--expect any)" : "");
  }
  if (a.probes.empty()) return "INCONCLUSIVE: the sweep holds no batch besides the anchor alone";
  return std::string(outcome == CheckOutcome::passed ? "INVARIANT" : "INCONCLUSIVE") +
         ": the anchor's output was bitwise equal to the anchor alone's in all " + of +
         (outcome == CheckOutcome::passed ? ", and the control was seen"
                                          : ", but the control was not seen");
}

std::vector<std::string> invariance_details(const InvarianceAnalysis& a) {
  std::vector<std::string> lines;
  std::set<int> sizes, failing;
  std::set<std::string> positions, neighbours;
  for (const ProbeOutcome& p : a.probes) {
    sizes.insert(p.config.batch_size);
    positions.insert(p.config.position);
    if (!p.config.neighbours.empty()) neighbours.insert(p.config.neighbours);
    if (!p.equal) failing.insert(p.config.batch_size);
  }
  lines.push_back("sweep: " + a.source + " model " + a.model + " on " + a.device +
                  (a.mode.empty() ? "" : ", mode " + a.mode) + ", output " + a.dtype + "; " +
                  std::to_string(a.probes.size()) + " probe(s) at batch sizes " +
                  size_ranges(sizes) + " against the anchor alone");
  if (!failing.empty()) {
    lines.push_back("not invariant at batch sizes " + size_ranges(failing) + " (" +
                    std::to_string(failing.size()) + " of " + std::to_string(sizes.size()) +
                    " sizes)");
    const ProbeOutcome& first = a.probes[*a.first_failing];
    if (first.first_break) {
      lines.push_back("first op to part at " + probe_place(first.config) + ": " +
                      break_text(*first.first_break));
    }
  }
  for (const OpBreaks& b : a.breaking_ops) {
    lines.push_back("batch-dependent op: " + op_place(b.op, b.module) + " (op " +
                    std::to_string(b.op_index) + "), where " + std::to_string(b.probes) +
                    " probe(s) first parted");
  }
  lines.push_back(control_text(a.control));
  return lines;
}

FindingTable invariance_table(const InvarianceAnalysis& a) {
  FindingTable t{{"batch size", "anchor", "neighbours", "elements differing", "max", "first op"},
                 {}};
  constexpr std::size_t kRows = 24;  // the JSON holds every probe
  for (const ProbeOutcome& p : a.probes) {
    if (p.equal) continue;
    if (t.rows.size() == kRows) {
      t.rows.push_back({"...", "", "", "", "", "(every probe in the JSON report)"});
      break;
    }
    t.rows.push_back({std::to_string(p.config.batch_size),
                      p.config.position + " (row " + std::to_string(p.config.anchor_row) + ")",
                      p.config.neighbours, differing_text(p), ulps_text(p),
                      p.first_break ? op_place(p.first_break->op, p.first_break->module) : "-"});
  }
  return t;
}

std::vector<std::string> invariance_next_steps(const InvarianceAnalysis& a,
                                               const std::string& command) {
  // The engine has a mode that makes every op invariant; a PyTorch model's fix is the user's (the
  // op named above), which no command of this tool applies.
  if (a.invariant || a.source != "engine" || a.mode == "batch_invariant" || command.empty()) {
    return {};
  }
  return {command + " --mode batch_invariant"};
}

}  // namespace

Finding invariance_finding(const InvarianceAnalysis& a, const InvarianceFindingOptions& options) {
  Finding f;
  f.id = "invariance";
  f.name = "batch invariance";
  f.outcome = invariance_outcome(a, options);
  f.summary = invariance_summary(a, f.outcome);
  f.details = invariance_details(a);
  f.table = invariance_table(a);
  f.next_steps = invariance_next_steps(a, options.rerun_command);
  json probes = json::array();
  for (const ProbeOutcome& p : a.probes) probes.push_back(probe_json(p));
  json ops = json::array();
  for (const OpBreaks& b : a.breaking_ops) {
    ops.push_back(
        {{"op_index", b.op_index}, {"op", b.op}, {"module", b.module}, {"probes", b.probes}});
  }
  f.data = {{"invariant", a.invariant},
            {"source", a.source},
            {"model", a.model},
            {"mode", a.mode},
            {"device", a.device},
            {"dtype", a.dtype},
            {"reference_ops", a.reference_ops},
            {"first_failing", a.first_failing ? probe_json(a.probes[*a.first_failing]) : json()},
            {"breaking_ops", ops},
            {"control", control_json(a.control)},
            {"probes", probes}};
  return f;
}

}  // namespace ra::compare
