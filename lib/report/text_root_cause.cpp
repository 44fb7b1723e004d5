// The root-cause section of the text report (report/text_sections.h): where a divergence entered,
// from op records (compare/compare.h RootCause).
#include <cstdint>

#include "report/text_format.h"
#include "report/text_sections.h"
#include "trace/op_names.h"
#include "trace/op_window.h"

namespace ra::report::text {
namespace {

using compare::KeptOpReplay;
using compare::RootCause;
using ra::DType;

std::string step_text(const RootCause& c) {
  return format("step %lld (epoch %lld, batch %lld)", static_cast<long long>(c.step),
                static_cast<long long>(c.epoch), static_cast<long long>(c.batch));
}

// "conv2d.backward_filter in conv2d_0 (nondeterministic, conv 32x1x16x16 k8 3x3 s1 p0)"
std::string op_text(const trace::OpRecord& o) {
  std::string out = shown(o.op);
  if (!o.layer.empty()) out += " in " + shown(o.layer);
  std::string how = o.mode;
  if (!o.ledger_key.empty()) how += (how.empty() ? "" : ", ") + shown(o.ledger_key);
  if (!how.empty()) out += " (" + how + ")";
  return out;
}

std::string names(const std::vector<std::size_t>& positions, const trace::OpRecord& op,
                  bool input) {
  std::string out;
  for (std::size_t i : positions) {
    out += (out.empty() ? "" : ", ") +
           (input ? trace::op_input_name(op, i) : trace::op_output_name(op, i));
  }
  return out;
}

std::string plural(int n, const char* word) {
  return format("%d %s%s", n, word, n == 1 ? "" : "s");
}

// "dw differs in 14 of 4096 elements, by at most 3 ULP (max |difference| 2.4e-07, relative
// 0.0012)". Elements that changed sign are counted apart and kept out of the ULP maximum, which
// across zero would count every float between ("14 of 4096 elements (2 change sign), by at most
// 3 ULP where the signs agree (...)"; "..., all changing sign (...)" when every one did).
std::string difference_text(const trace::OpRecord& op, const RootCause::OutputDifference& d) {
  const compare::TensorDifference& t = d.difference;
  std::string out =
      trace::op_output_name(op, d.output) +
      format(" differs in %lld of %lld elements", (long long)t.differing, (long long)d.elements);
  if (d.dtype != DType::f32) return out;
  if (t.max_ulp_same_sign == UINT64_MAX) return out + ", a NaN against a number";
  const std::string sizes =
      format(" (max |difference| %.3g, relative %.3g)", t.max_abs, t.max_relative);
  if (t.sign_flips == 0)
    return out + format(", by at most %llu ULP", (unsigned long long)t.max_ulp_same_sign) + sizes;
  if (t.max_ulp_same_sign == 0) return out + ", all changing sign" + sizes;
  return out +
         format(" (%lld change sign), by at most %llu ULP where the signs agree",
                (long long)t.sign_flips, (unsigned long long)t.max_ulp_same_sign) +
         sizes;
}

// The magnitude lines of an op cause (audit/op_replay.h): one per run measured, then the note.
std::string magnitude_text(const RootCause& c) {
  if (!c.magnitude) return "";
  const RootCause::Magnitude& m = *c.magnitude;
  std::string out;
  for (const RootCause::RunMagnitude& r : m.runs) {
    std::string what;
    for (const RootCause::OutputDifference& d : r.outputs) {
      what += (what.empty() ? "" : "; ") + difference_text(c.record, d);
    }
    out += format("  magnitude, run %d: ", r.run) + what + "\n";
  }
  if (m.kept > 0) {
    out += format("  (from the values the runs kept as they ran: %d of %zu runs)\n", m.kept,
                  c.runs.size() + 1);
  }
  if (m.executions > 0) {
    out += "  (the reference run replayed to the op, which ran " + plural(m.executions, "time") +
           " on the recorded inputs: " + plural(m.distinct_outputs, "distinct output") + ")\n";
  }
  if (!m.spread.empty()) {
    std::string what;
    for (const RootCause::OutputDifference& d : m.spread) {
      what += (what.empty() ? "" : "; ") + difference_text(c.record, d);
    }
    out += "  spread of its outcomes there, widest from the first: " + what + "\n";
  }
  for (const KeptOpReplay& r : m.kept_replays) {
    const bool one = r.distinct_outputs == 1;
    out += format("  replayed in a fresh process, run %d: %s on its kept inputs gave %s%s\n", r.run,
                  plural(r.times, "call").c_str(),
                  plural(r.distinct_outputs, "distinct output").c_str(),
                  one && r.matches_run ? ", the run's: deterministic there, so the runs differ "
                                         "by a setting or an input"
                  : one                ? ", not the run's: a setting of the replay differs"
                                       : ": the kernel gives other bits on the same inputs");
  }
  if (!m.note.empty()) out += "  magnitude: " + shown(m.note) + "\n";
  return out;
}

// At most this many ops of the chain are named; the rest are counted.
constexpr std::size_t kChainShown = 6;

std::string chain_text(const RootCause& c) {
  if (c.chain.empty()) return "  no later op of the step differs\n";
  std::string out = format("  then %zu of the %zu later ops of the step differ:", c.chain.size(),
                           c.step_records - c.index - 1);
  // Named while the line stays within kMaxLineLength with room for the count of the rest.
  constexpr std::size_t kRoomForRest = 20;
  std::size_t named = 0;
  for (; named < c.chain.size() && named < kChainShown; ++named) {
    const RootCause::Link& l = c.chain[named];
    std::string link = (named == 0 ? " " : ", ") + shown(l.op) +
                       (l.layer.empty() ? "" : " (" + shown(l.layer) + ")");
    if (l.inputs_identical) link += " [inputs identical: a cause of its own]";
    if (named > 0 && out.size() + link.size() + kRoomForRest > kMaxLineLength) break;
    out += link;
  }
  if (named < c.chain.size()) out += format(", ... (%zu more)", c.chain.size() - named);
  return out + "\n";
}

// "{0,2} FFT_TILING (deterministic, autotuned, 0.117 ms), {1} FFT (...)", the first few groups.
std::string groups_text(const std::vector<compare::AlgorithmGroup>& groups) {
  constexpr std::size_t kGroupsShown = 4;
  std::string out;
  for (std::size_t i = 0; i < groups.size() && i < kGroupsShown; ++i) {
    const std::string facts = algorithm_facts(groups[i]);
    out += (i ? ", " : "") + algorithm_group_text(groups[i]) +
           (facts.empty() ? "" : " (" + facts + ")");
  }
  if (groups.size() > kGroupsShown) out += format(" ... (%zu more)", groups.size() - kGroupsShown);
  return out;
}

// The algorithm line of a cause whose class is not the algorithm choice: the one algorithm every
// run ran there, named in full, or the groups when they differ.
std::string algorithm_line(const RootCause& c) {
  if (c.algorithms.size() > 1) return "  algorithms: " + groups_text(c.algorithms) + "\n";
  if (c.algorithms.empty() || c.algorithms[0].algorithm.empty()) return "";
  const std::string facts = algorithm_facts(c.algorithms[0]);
  return "  algorithm: " + shown(c.algorithms[0].algorithm) +
         (facts.empty() ? "" : " (" + facts + ")") + "\n";
}

// What made the op's output differ, worded for its class (compare/compare.h RootCause::Class).
std::string class_text(const RootCause& c) {
  switch (c.cause) {
    case RootCause::Class::nondeterministic_kernel:
      if (!c.record.in_types.empty() && c.record.algorithm.empty()) {
        // A PyTorch op with no algorithm recorded (no cuDNN call): what else can have changed.
        return "  cause: the same aten op on the same inputs gave other bits: a nondeterministic "
               "kernel, or a setting that is no argument of the op (thread count, TF32, a "
               "library's algorithm choice)\n";
      }
      return "  cause: nondeterministic kernel: the same algorithm on the same inputs gave other "
             "bits\n" +
             algorithm_line(c);
    case RootCause::Class::algorithm_choice:
      return "  cause: algorithm choice: the runs ran different algorithms here: " +
             groups_text(c.algorithms) + "\n";
    case RootCause::Class::fault:
      return "  cause: injected fault (--inject-fault, a test facility) in this op's output\n" +
             algorithm_line(c);
    case RootCause::Class::environment: {
      std::string keys;
      for (const std::string& k : c.environment_keys) keys += (keys.empty() ? "" : ", ") + shown(k);
      return "  cause: environment: the runs ran on other machines or builds (" + keys +
             " differ; 'environment differs' below)\n" + algorithm_line(c);
    }
  }
  return "";
}

std::string cause_text(const RootCause& c) {
  const std::string runs = " [runs " + run_list(c.runs) + "]";
  switch (c.kind) {
    case RootCause::Kind::op: {
      std::string out = "root cause: " + step_text(c) +
                        format(", op %zu of %zu: ", c.index + 1, c.step_records) +
                        op_text(c.record) + runs + "\n";
      if (c.record.op == "batch") {  // a pseudo-op with no inputs: the data, not a kernel
        out += "  the batch differs: " + names(c.differing_outputs, c.record, false) +
               " (the data order or the data read; no op computed it)\n";
      } else {
        out +=
            "  inputs identical, output differs: " + names(c.differing_outputs, c.record, false) +
            "\n";
        out += class_text(c);
      }
      out += magnitude_text(c);
      return out + chain_text(c);
    }
    case RootCause::Kind::outside_ops: {
      if (c.step < 0) return "root cause: outside the traced ops: " + shown(c.detail) + runs + "\n";
      std::string out = "root cause: outside the traced ops, " + step_text(c);
      if (c.index < c.step_records) {
        out += format(", op %zu of %zu: ", c.index + 1, c.step_records) + op_text(c.record) + runs +
               "\n  input differs: " + names(c.differing_inputs, c.record, true) +
               ", while every earlier op's output matched: no op is blamed\n";
        if (!c.record.in_types.empty()) out += "  " + shown(c.detail) + "\n";
        return out + chain_text(c);
      }
      return out + runs + "\n  " + shown(c.detail) + "\n";
    }
    case RootCause::Kind::op_sequence:
      return "root cause: the runs executed different ops, " + step_text(c) + runs + "\n  " +
             shown(c.detail) + "\n";
    case RootCause::Kind::outside_window:
      return "root cause: not localised: " + shown(c.detail) + runs + "\n";
  }
  return "";
}

}  // namespace

std::string root_cause(const ComparisonResult& r) {
  if (!r.root_cause.ops_traced || r.root_cause.causes.empty()) return "";
  std::string out;
  for (const RootCause& c : r.root_cause.causes) out += cause_text(c);
  return out;
}

}  // namespace ra::report::text
