// The root cause of each differing run, from op records (compare_phases.h, compare.h RootCause).
// Identical code runs identical op sequences, so the records of two runs pair by position; the
// first pair that differs is where the difference entered: an op whose inputs matched and whose
// outputs did not made it, and an input that differs while every earlier output matched came
// from outside the traced ops (a file read, an injected fault, a step outside the window).
#include <algorithm>
#include <tuple>

#include "compare/compare_phases.h"

namespace ra::compare {

const char* to_string(RootCause::Kind kind) {
  switch (kind) {
    case RootCause::Kind::op:
      return "op";
    case RootCause::Kind::outside_ops:
      return "outside_ops";
    case RootCause::Kind::op_sequence:
      return "op_sequence";
    case RootCause::Kind::outside_window:
      return "outside_window";
  }
  return "?";
}

const char* to_string(RootCause::Class cause) {
  switch (cause) {
    case RootCause::Class::nondeterministic_kernel:
      return "nondeterministic_kernel";
    case RootCause::Class::algorithm_choice:
      return "algorithm_choice";
    case RootCause::Class::fault:
      return "fault";
    case RootCause::Class::environment:
      return "environment";
  }
  return "?";
}

namespace phases {
namespace {

using Kind = RootCause::Kind;

std::vector<std::size_t> differing(const std::vector<Digest128>& a,
                                   const std::vector<Digest128>& b) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) out.push_back(i);
  }
  return out;
}

// The names of what a step record holds that differ between two runs ("weights, optimizer
// state"), or "" when the step records agree.
std::string step_state_differences(const trace::StepRecord& a, const trace::StepRecord& b) {
  std::vector<std::string> names;
  if (a.batch_indices != b.batch_indices || a.batch_inputs != b.batch_inputs ||
      a.batch_labels != b.batch_labels) {
    names.push_back("batch");
  }
  // A step recorded per category (a level of detail) compares by one digest per category.
  const bool combined = !a.per_tensor || !b.per_tensor;
  const auto differ = [&](Category c, const std::vector<Digest128>& x,
                          const std::vector<Digest128>& y) {
    return combined ? combined_digest(c, a) != combined_digest(c, b) : x != y;
  };
  if (differ(Category::buffers, a.buffers, b.buffers)) names.push_back("buffers");
  if (a.loss_bits != b.loss_bits) names.push_back("loss");
  if (differ(Category::gradients, a.grads, b.grads)) names.push_back("gradients");
  if (differ(Category::weights, a.weights, b.weights)) names.push_back("weights");
  if (a.optimizer_state != b.optimizer_state) names.push_back("optimizer state");
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Whether two steps' op records are the same executions (the algorithms aside: they explain a
// difference, they are none).
bool same_executions(const trace::StepRecord& a, const trace::StepRecord& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    if (!a.ops[i].same_execution(b.ops[i])) return false;
  }
  return true;
}

// Whether the run's test-only op fault (trace header "fault", --inject-fault op=) names this op
// of this step: it flipped a bit of the op's output right after it ran.
bool fault_fired_at(const trace::Trace& run, const RootCause& c) {
  const nlohmann::json& f = run.header.fault;
  return f.is_object() && f.value("op", "") == c.record.layer + "/" + c.record.op &&
         f.value("step", std::int64_t(-1)) == c.step;
}

// What made an op cause (kind op) of run `run` against the reference run: an injected fault, a
// difference of machine or build, a different algorithm, else the kernel's own nondeterminism.
// Also the two runs' algorithms there, as groups of one run (merged when causes are grouped).
void classify(RootCause& c, const trace::Trace& ref, int ref_run, const trace::StepRecord* a,
              const trace::Trace& other, int run, const trace::StepRecord* b) {
  if (a == nullptr || b == nullptr || c.index >= a->ops.size() || c.index >= b->ops.size()) return;
  const AlgorithmGroup mine = algorithm_at(ref, ref_run, a->ops[c.index]);
  const AlgorithmGroup theirs = algorithm_at(other, run, b->ops[c.index]);
  c.algorithm = theirs.algorithm;
  c.algorithm_deterministic = theirs.deterministic;
  c.algorithms = {mine, theirs};
  c.environment_keys = numeric_environment_differences(ref.header, other.header);
  if (fault_fired_at(ref, c) || fault_fired_at(other, c)) {
    c.cause = RootCause::Class::fault;
  } else if (!c.environment_keys.empty()) {
    c.cause = RootCause::Class::environment;
  } else if (!mine.algorithm.empty() && !theirs.algorithm.empty() &&
             mine.algorithm != theirs.algorithm) {
    c.cause = RootCause::Class::algorithm_choice;
  } else {
    c.cause = RootCause::Class::nondeterministic_kernel;
  }
}

// Where a differing input of a PyTorch op record (one with types) came from, as far as its type
// says; the engine's records keep the general wording.
std::string outside_ops_detail(const trace::OpRecord& a, const std::vector<std::size_t>& inputs) {
  const auto all_typed = [&](const char* type) {
    return std::all_of(inputs.begin(), inputs.end(), [&](std::size_t i) {
      return i < a.in_types.size() && a.in_types[i] == type;
    });
  };
  if (a.in_types.empty()) return "an input differs while every earlier op's output matched";
  if (all_typed("generator")) {
    return "the random generator's state differs: the runs were seeded differently, or drew "
           "from it a different number of times before this op";
  }
  if (all_typed("args")) {
    return "the call's non-tensor arguments differ: a Python value passed to the op differs "
           "between the runs";
  }
  return "a tensor that no recorded op of the step made differs: it came from before the "
         "window, from Python (torch.tensor, numpy, a file), or from an op that bypasses "
         "PyTorch's dispatcher (a fused kernel, a custom CUDA extension), blamed here, at the "
         "next op the dispatcher saw";
}

void locate_step(const trace::StepRecord& r, RootCause& cause) {
  cause.step = r.step;
  cause.epoch = r.epoch;
  cause.batch = r.batch;
}

// Within one step whose op records differ: the first differing pair, and the chain after it.
RootCause localise_in_step(const trace::StepRecord& ref, const trace::StepRecord& other) {
  RootCause cause;
  locate_step(ref, cause);
  cause.step_records = ref.ops.size();
  const std::size_t common = std::min(ref.ops.size(), other.ops.size());
  std::size_t i = 0;
  for (; i < common; ++i) {
    const trace::OpRecord &a = ref.ops[i], &b = other.ops[i];
    if (a.op != b.op || a.layer != b.layer || a.in.size() != b.in.size() ||
        a.out.size() != b.out.size()) {
      cause.kind = Kind::op_sequence;
      cause.index = i;
      cause.record = a;
      cause.detail = "record " + std::to_string(i) + " is " + a.op + " (" + a.layer +
                     ") in the reference run but " + b.op + " (" + b.layer + ")";
      return cause;
    }
    if (a.mode != b.mode || a.ledger_key != b.ledger_key) {
      cause.kind = Kind::op_sequence;
      cause.index = i;
      cause.record = a;
      cause.detail = a.op + " (" + a.layer + ") ran in mode '" + a.mode + "' on '" + a.ledger_key +
                     "' in the reference run but in mode '" + b.mode + "' on '" + b.ledger_key +
                     "'";
      return cause;
    }
    if (a.in != b.in || a.out != b.out) break;
  }
  if (i == common) {  // every common record agrees: one run executed more ops
    cause.kind = Kind::op_sequence;
    cause.index = i;
    cause.detail = "the reference run recorded " + std::to_string(ref.ops.size()) +
                   " ops in the step, this run " + std::to_string(other.ops.size());
    return cause;
  }
  const trace::OpRecord &a = ref.ops[i], &b = other.ops[i];
  cause.index = i;
  cause.record = a;
  cause.differing_inputs = differing(a.in, b.in);
  cause.differing_outputs = differing(a.out, b.out);
  cause.kind = cause.differing_inputs.empty() ? Kind::op : Kind::outside_ops;
  if (cause.kind == Kind::outside_ops) cause.detail = outside_ops_detail(a, cause.differing_inputs);
  for (std::size_t j = i + 1; j < common; ++j) {
    // Records pair by position only while the runs execute the same ops (a PyTorch run's later
    // ops may follow its data: another branch taken): past that, no pair says anything.
    if (ref.ops[j].op != other.ops[j].op || ref.ops[j].layer != other.ops[j].layer) break;
    if (ref.ops[j].out != other.ops[j].out) {
      cause.chain.push_back({j, ref.ops[j].op, ref.ops[j].layer, ref.ops[j].in == other.ops[j].in});
    }
  }
  return cause;
}

bool same_cause(const RootCause& a, const RootCause& b) {
  return a.kind == b.kind && a.cause == b.cause && a.step == b.step && a.index == b.index &&
         a.record.op == b.record.op && a.record.layer == b.record.layer && a.detail == b.detail;
}

}  // namespace

std::optional<RootCause> initial_root_cause(const trace::Trace& ref, const trace::Trace& other) {
  if (ref.initial_weights == other.initial_weights &&
      ref.initial_buffers == other.initial_buffers) {
    return std::nullopt;
  }
  RootCause c;
  c.kind = Kind::outside_ops;
  c.step = -1;
  c.detail = ref.initial_weights != other.initial_weights
                 ? "the initial weights differ (before step 0)"
                 : "the initial buffers differ (before step 0)";
  return c;
}

std::optional<RootCause> step_root_cause(const trace::Trace& ref, int ref_run,
                                         const trace::StepRecord& a, const trace::Trace& other,
                                         int run, const trace::StepRecord& b) {
  const std::string state = step_state_differences(a, b);
  if (a.ops_recorded && b.ops_recorded) {
    if (!same_executions(a, b)) {
      RootCause c = localise_in_step(a, b);
      if (c.kind == Kind::op) classify(c, ref, ref_run, &a, other, run, &b);
      return c;
    }
    if (state.empty()) return std::nullopt;
    RootCause c;  // the ops agree, what the step left behind does not
    locate_step(a, c);
    c.kind = Kind::outside_ops;
    c.step_records = a.ops.size();
    c.index = a.ops.size();
    c.detail = "every op of the step matched, but its recorded " + state +
               " differ: changed after the ops, outside them";
    return c;
  }
  if (state.empty()) return std::nullopt;
  RootCause c;
  locate_step(a, c);
  c.kind = Kind::outside_window;
  c.detail = "the runs first differ at step " + std::to_string(a.step) + " (" + state +
             "), which has no op records";
  return c;
}

std::vector<RootCause> group_root_causes(std::vector<std::pair<int, RootCause>> found) {
  std::vector<RootCause> causes;
  for (auto& entry : found) {
    // (Not a structured binding: clang 14, CI's sanitizer compiler, cannot capture one.)
    const int run = entry.first;
    RootCause& c = entry.second;
    auto same = std::find_if(causes.begin(), causes.end(),
                             [&](const RootCause& known) { return same_cause(known, c); });
    if (same != causes.end()) {
      same->runs.push_back(run);
      if (c.algorithms.size() == 2) same->algorithms.push_back(c.algorithms[1]);
      for (const std::string& key : c.environment_keys) {
        if (std::find(same->environment_keys.begin(), same->environment_keys.end(), key) ==
            same->environment_keys.end())
          same->environment_keys.push_back(key);
      }
      continue;
    }
    c.runs.push_back(run);
    causes.push_back(std::move(c));
  }
  for (RootCause& c : causes) c.algorithms = merge_algorithm_groups(c.algorithms, false);
  std::stable_sort(causes.begin(), causes.end(), [](const RootCause& a, const RootCause& b) {
    return std::tie(a.step, a.index) < std::tie(b.step, b.index);
  });
  return causes;
}

std::optional<trace::OpWindow> suggested_trace_ops(const ComparisonResult& result) {
  const auto window_at = [](std::int64_t step) { return trace::OpWindow{step, step + 1}; };
  if (result.identity.identical || !result.first_divergence || !result.first_divergence->step ||
      result.first_divergence->category == Category::steps || result.next_step.loader_advice) {
    return std::nullopt;  // nothing parts, the initial state does, the step counts or the loader
  }
  if (!result.root_cause.ops_traced) return window_at(*result.first_divergence->step);
  for (const RootCause& c : result.root_cause.causes) {
    if (c.kind == RootCause::Kind::outside_window) return window_at(c.step);
  }
  return std::nullopt;  // the op records localised it
}

bool suggest_tensor_digests(const ComparisonResult& result) {
  return result.next_step.trace_ops && result.first_divergence &&
         result.first_divergence->per_category;
}

}  // namespace phases
}  // namespace ra::compare
