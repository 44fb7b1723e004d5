#include "compare/compare.h"
#include "compare/finding_facts.h"

#include <algorithm>

#include "compare/checks.h"
#include "compare/compare_phases.h"
#include "compare/duplicate_runs.h"
#include "compare/equivalence_floor.h"
#include "compare/program_alignment.h"
#include "compare/step_walk.h"
#include "core/error.h"
#include "trace/op_window.h"

namespace ra::compare {

const char* to_string(Category c) {
  switch (c) {
    case Category::initial_weights:
      return "initial_weights";
    case Category::batches:
      return "batches";
    case Category::buffers:
      return "buffers";
    case Category::losses:
      return "losses";
    case Category::gradients:
      return "gradients";
    case Category::weights:
      return "weights";
    case Category::optimizer_state:
      return "optimizer_state";
    case Category::steps:
      return "steps";
  }
  return "?";
}

bool ComparisonResult::nothing_compared() const {
  if (identity.spread_only) return false;
  return identity.compared_runs.size() < 2 || identity.no_steps;
}

namespace {

// The next step, one ordered rule over the spine and the findings, once they are all made: the
// loader advice where PyTorch runs' batches part (with what the loader-workers finding saw), else
// the suggested --trace-ops window (and whether with tensor digests); either dropped where a
// finding explains the difference already; and the command that re-runs with the window.
// Runs that part only between world sizes (a configuration), two programs judged against a floor
// (they differ by design: the equivalence finding says where to look next), a resumed run (its
// check names its divergence; --trace-ops does not combine with --interrupt-at, docs/resume.md)
// and a collective that is the cause (no op of a rank to localise) leave no re-run with op
// records; a divergence that follows a resume not exact gets the resume's words, not the loader's.
void decide_next_step(ComparisonResult& result, const ComparisonOptions& options,
                      const phases::ComparedRuns& compared,
                      const std::optional<Digest128>& reference_indices) {
  result.next_step.loader_advice = phases::loader_advice(result, compared, reference_indices);
  result.next_step.trace_ops = phases::suggested_trace_ops(result);
  const bool configuration = result.world_sizes && result.world_sizes->configuration &&
                             result.world_sizes->identical_within;
  const DistributedFindings* distributed = distributed_of(result);
  const bool collective_cause = distributed != nullptr && distributed->collective &&
                                distributed->collective->inputs_identical;
  if (configuration || options.expect_equivalent || divergence_follows_resume(result)) {
    result.next_step.loader_advice.reset();
  }
  if (configuration || options.expect_equivalent || !resumes_of(result).empty() ||
      collective_cause) {
    result.next_step.trace_ops.reset();
  }
  result.next_step.tensor_digests = phases::suggest_tensor_digests(result);
  if (!result.next_step.trace_ops || !options.rerun_command) return;
  result.next_step.command = options.rerun_command(trace::to_string(*result.next_step.trace_ops),
                                                   result.next_step.tensor_digests);
}

// What only the caller can give, which needs the run folders: where the traces came from, the
// magnitudes, the side files left unused.
void add_caller_phases(ComparisonResult& result, const std::vector<trace::Trace>& traces,
                       const ComparisonOptions& options) {
  result.sources.audit_folders = options.audit_folders;
  if (options.measure_magnitudes) options.measure_magnitudes(result, traces);
  if (options.ignored_snapshots) result.sources.ignored_snapshots = options.ignored_snapshots();
}

// Whether the traces can be compared as the options ask: one program's runs, or two programs
// (--align: their op records aligned; --expect equivalent: judged against a floor).
void check_programs(const std::vector<trace::Trace>& traces, const ComparisonOptions& options) {
  if (options.align && options.expect_equivalent) {
    throw InputError(
        "--align and --expect equivalent ask two things of different traces: align A's and B's "
        "traces alone (compare A B --align), and judge them against the floor with A's perturbed "
        "runs (compare A B A-PERTURBED --expect equivalent)");
  }
  phases::check_comparable(traces, options.align || options.expect_equivalent);
  if (options.align) check_alignable(traces);
  if (options.expect_equivalent) {
    const EquivalenceRoles roles = equivalence_roles(traces);
    check_programs_pair_up(traces[static_cast<std::size_t>(roles.a)],
                           traces[static_cast<std::size_t>(roles.b)], "--expect equivalent");
  }
}

}  // namespace

bool divergence_follows_resume(const ComparisonResult& r) {
  if (!r.first_divergence || !r.first_divergence->step) return false;
  const std::vector<ResumeVerdict>& resumes = resumes_of(r);
  return std::any_of(resumes.begin(), resumes.end(), [&](const ResumeVerdict& v) {
    return v.compared && !v.exact() && v.step <= *r.first_divergence->step;
  });
}

// The phases, in order (compare/compare_phases.h says what each computes and where it lives);
// what they take from the steps, one walk over them gathers first (compare/step_walk.h).
ComparisonResult compare_traces(const std::vector<trace::Trace>& traces,
                                const ComparisonOptions& options) {
  check_programs(traces, options);
  phases::ComparedRuns compared = phases::same_seed_runs(traces);
  // Two programs' records are not paired by position into root causes (--align aligns them).
  const bool two_programs = options.align || options.expect_equivalent;
  phases::StepFindings found = phases::walk_steps(traces, compared, !two_programs);
  compared.common_steps = found.common_steps;
  ComparisonResult result;
  result.identity.expect_identical =
      !options.expect_equivalent &&
      options.expect_identical.value_or(phases::default_expectation(traces));
  result.subject.spec_name = traces[0].header.spec.value("name", "");
  result.subject.spec_digest = traces[0].header.spec_digest;
  result.sources.copies = copies_of_one_run(found.contents);

  phases::RunSummaries summaries = phases::summarize_runs(traces, found.outcomes);
  result.runs = std::move(summaries.runs);
  result.identity.classes = std::move(summaries.classes);
  result.subject.mode_summary = std::move(summaries.mode_summary);
  result.subject.pytorch = phases::all_pytorch(traces);

  result.identity.compared_runs = compared.ids;
  result.identity.identical = phases::all_in_one_class(compared, result.runs);

  const std::vector<std::int64_t>& steps = found.step_counts;
  result.identity.no_steps = compared.ids.size() >= 2 &&
                             std::all_of(compared.ids.begin(), compared.ids.end(), [&](int id) {
                               return steps[static_cast<std::size_t>(id)] == 0;
                             });
  const bool any_steps =
      std::any_of(steps.begin(), steps.end(), [](std::int64_t n) { return n > 0; });
  result.identity.spread_only = compared.traces.empty() && traces.size() >= 2 && any_steps;
  result.categories = std::move(found.verdicts);
  result.first_divergence = phases::first_divergence(result.categories);
  if (!result.first_divergence) result.first_divergence = found.step_count;
  for (const trace::Trace& t : traces)
    result.root_cause.ops_traced = result.root_cause.ops_traced || t.header.trace_ops;
  if (result.root_cause.ops_traced) {
    result.root_cause.op_window = compared.traces[0]->header.trace_ops;
    result.root_cause.causes = std::move(found.root_causes);
    result.root_cause.steps = std::move(found.cause_steps);
  }

  result.losses = phases::loss_differences(compared, options.loss_tolerance, found.first_loss);
  result.growth.epochs = phases::epoch_growth(compared, options, found.epochs);
  result.growth.steps = std::move(found.series);
  result.snapshots = phases::snapshot_divergences(options, compared, result.first_divergence);

  result.seed_groups = phases::seed_group_statistics(result.runs);

  result.identity.allow_empty = options.allow_empty;
  result.world_sizes = phases::world_sizes(traces, compared, result.runs);
  result.divergent_machines = phases::divergent_machines(compared, result.identity.classes);
  add_caller_phases(result, traces, options);
  // The registered checks read the spine made above (compare/checks.h); then the next step.
  result.findings = run_checks(traces, result, options);
  decide_next_step(result, options, compared, found.reference_indices_at_batches_divergence);
  return result;
}

}  // namespace ra::compare
