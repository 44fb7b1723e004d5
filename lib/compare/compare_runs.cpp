// Phases of the comparison about whole runs: whether the traces can be compared, what each run
// did (its summary and outcome class) and which runs are expected to agree (compare_phases.h).
#include <algorithm>
#include <bit>
#include <set>

#include "compare/compare_phases.h"
#include "compare/program_alignment.h"
#include "compare/step_walk.h"
#include "core/error.h"
#include "spec/spec.h"

namespace ra::compare::phases {
namespace {

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

// An autotune run that chose nothing by timing: every convolution algorithm of its ledger came
// from a pin file (--pin-algorithms) and every entry is deterministic. Autotune runs its other
// reductions deterministically (cuBLAS without atomics, custom kernels in their fixed order), so
// such a run is as reproducible as deterministic mode.
bool pinned_deterministic(const trace::Trace& t) {
  const nlohmann::json& ledger = t.header.ledger;
  if (!ledger.is_array() || ledger.empty()) return false;
  for (const nlohmann::json& e : ledger) {
    if (!e.is_object() || e.value("deterministic", false) != true) return false;
    const std::string direction = e.value("direction", "");
    const bool convolution =
        e.value("layer", "").rfind("conv ", 0) == 0 &&
        (direction == "forward" || direction == "backward_data" || direction == "backward_filter");
    if (convolution && e.value("chosen_by", "") != "pinned-file") return false;
  }
  return true;
}

// Every reducing op of the run was in deterministic mode (the policy recorded in its header):
// its override, else the run's mode; or in batch_invariant mode (deterministic paths, with
// invariant forward choices); or in autotune mode with every algorithm pinned and deterministic.
// (A nondeterministic run with every op overridden to deterministic counts.)
bool fully_deterministic(const trace::Trace& t) {
  const nlohmann::json& d = t.header.determinism;
  const std::string mode = d.value("mode", "");
  const nlohmann::json ops = d.value("ops", nlohmann::json::object());
  for (int i = 0; i < spec::kReducingOpCount; ++i) {
    const char* op = spec::to_string(static_cast<spec::ReducingOp>(i));
    const std::string op_mode = ops.value(op, mode);
    if (op_mode == "deterministic" || op_mode == "batch_invariant") continue;
    if (op_mode == "autotune" && pinned_deterministic(t)) continue;
    return false;
  }
  return true;
}

RunSummary summary_of(const trace::Trace& t, int run) {
  RunSummary s;
  s.run = run;
  s.seed_group = t.header.seed_group;
  s.seed_init = t.header.seed_init;
  s.seed_data = t.header.seed_data;
  s.seed_dropout = t.header.seed_dropout;
  s.steps = t.final->steps;
  s.final_loss_bits = t.final->final_loss_bits;
  s.final_loss = std::bit_cast<float>(s.final_loss_bits);
  s.eval_accuracy = t.final->eval_accuracy;
  s.eval_loss = t.final->eval_loss;
  s.median_step_seconds = t.final->median_step_seconds;
  s.total_seconds = t.final->total_seconds;
  if (t.final->recording_cost) {
    s.recording_fraction = t.final->recording_cost->fraction();
    s.recording_measured = true;
  } else if (s.steps > 0 && s.median_step_seconds > 0) {
    s.recording_fraction = t.final->recording_seconds / (s.median_step_seconds * s.steps);
  }
  s.source = t.source;
  return s;
}

}  // namespace

void check_comparable(const std::vector<trace::Trace>& traces, bool two_programs) {
  if (traces.empty()) throw InputError("no traces to compare");
  const trace::Trace& ref = traces[0];
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const trace::Trace& t = traces[i];
    if (!t.final) throw InputError(t.source + ": the run did not finish (no end record)");
    if (t.failed()) {
      throw InputError(t.source + ": the run " + trace::describe_failure(*t.final) +
                       " (its end record says so): a failed run is never compared as whole; "
                       "run it again (exec --resume reruns it)");
    }
    if (two_programs) continue;
    if (std::string why = other_spec_problem(traces, i); !why.empty()) throw InputError(why);
    // Names, shapes and dtypes (f32 in versions 1 and 2).
    if (t.header.params != ref.header.params) {
      throw InputError("traces have different parameter lists: " + ref.source + " and " + t.source);
    }
    if (t.header.buffers != ref.header.buffers) {
      throw InputError("traces have different buffer lists: " + ref.source + " and " + t.source);
    }
  }
}

bool all_fully_deterministic(const std::vector<trace::Trace>& traces) {
  return std::all_of(traces.begin(), traces.end(),
                     [](const trace::Trace& t) { return fully_deterministic(t); });
}

bool all_pytorch(const std::vector<trace::Trace>& traces) {
  return !traces.empty() && std::all_of(traces.begin(), traces.end(), [](const trace::Trace& t) {
    return t.header.backend.starts_with("pytorch");
  });
}

bool default_expectation(const std::vector<trace::Trace>& traces) {
  return all_pytorch(traces) || all_fully_deterministic(traces);
}

RunSummaries summarize_runs(const std::vector<trace::Trace>& traces) {
  return summarize_runs(traces, walk_steps(traces, same_seed_runs(traces)).outcomes);
}

RunSummaries summarize_runs(const std::vector<trace::Trace>& traces,
                            const std::vector<Digest128>& outcomes) {
  RunSummaries out;
  std::vector<Digest128> class_signatures;
  std::set<std::string> modes;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    RunSummary s = summary_of(traces[i], static_cast<int>(i));
    const Digest128 sig = outcomes[i];
    auto it = std::find(class_signatures.begin(), class_signatures.end(), sig);
    s.outcome_class = static_cast<int>(it - class_signatures.begin());
    if (it == class_signatures.end()) {
      class_signatures.push_back(sig);
      out.classes.emplace_back();
    }
    out.classes[s.outcome_class].push_back(s.run);
    modes.insert(describe_mode(traces[i].header.determinism));
    out.runs.push_back(s);
  }
  out.mode_summary = modes.size() == 1 ? *modes.begin() : "mixed";
  return out;
}

ComparedRuns same_seed_runs(const std::vector<trace::Trace>& traces) {
  ComparedRuns out;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    // The perturbed group parts from the others by design (its flipped weight): never compared.
    const std::string& group = traces[i].header.seed_group;
    if (group != "different" && group != "perturbed") {
      out.traces.push_back(&traces[i]);
      out.ids.push_back(static_cast<int>(i));
    }
  }
  if (!out.traces.empty()) {
    out.common_steps = static_cast<std::int64_t>(out.traces[0]->steps.size());
    for (const trace::Trace* t : out.traces)
      out.common_steps = std::min<std::int64_t>(out.common_steps, t->steps.size());
  }
  return out;
}

bool all_in_one_class(const ComparedRuns& compared, const std::vector<RunSummary>& runs) {
  std::set<int> classes;
  for (int id : compared.ids) classes.insert(runs[id].outcome_class);
  return classes.size() <= 1;
}

}  // namespace ra::compare::phases
