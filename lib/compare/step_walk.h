#pragma once
// What a comparison takes from the runs' steps, gathered in one pass over them: step s of every
// run at once, then step s+1 (docs/report.md, "Long runs"). No run's steps are held: what stays
// is a few digests per run, per category its first divergence, the first loss difference, the
// losses per epoch, the root causes and the plots' series (a loss per run and step, a bit per
// recorded tensor and step). The steps come from traces in memory (walk_steps) or from files
// read a record at a time (compare_trace_files, compare.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compare/compare.h"
#include "compare/compare_phases.h"

namespace ra::compare::phases {

// The loss part of an epoch's growth (EpochGrowth), over the steps the compared runs share.
struct EpochLosses {
  std::int64_t epoch = 0;
  double max_abs_loss_difference = 0.0;
  std::uint64_t max_loss_ulp = 0;
  std::int64_t last_step = -1;  // the epoch's last common step
  // Parameters whose digest differs in some run at last_step; none when that step recorded one
  // digest per category (trace/tensor_digests.h).
  std::optional<int> weights_differing = 0;
};

struct StepFindings {
  std::vector<std::int64_t> step_counts;  // per trace
  std::vector<Digest128> outcomes;        // per trace: everything it recorded, timings excluded
  std::vector<Digest128> contents;        // per trace: every record, timings included (copies)
  std::int64_t common_steps = 0;          // steps every compared run recorded
  std::vector<CategoryVerdict> verdicts;  // category_verdicts
  std::optional<Divergence> step_count;   // step_count_divergence
  std::optional<LossDifference> first_loss;
  // The reference run's sample-indices digest at the batches' first divergence (the loader advice
  // asks whether indices were recorded there).
  std::optional<Digest128> reference_indices_at_batches_divergence;
  std::vector<EpochLosses> epochs;  // per epoch of the reference run's common steps, in order
  StepSeries series;
  std::vector<RootCause> root_causes;  // found when `with_root_causes`
  // The records of each run at the step of a root cause it takes part in (trace position,
  // record): what a magnitude's replay reads of runs walked from their files.
  std::vector<std::pair<int, trace::StepRecord>> cause_steps;
};

class StepWalk {
 public:
  // `traces`: every run (the steps need not be there: the walk is given them); `positions`: the
  // compared runs (the reference first), as positions in `traces`; `ids`: their run indices in
  // the report. Root causes are looked for when `with_root_causes` (some run recorded ops).
  StepWalk(std::vector<const trace::Trace*> traces, std::vector<std::size_t> positions,
           std::vector<int> ids, bool with_root_causes);
  ~StepWalk();
  StepWalk(const StepWalk&) = delete;
  StepWalk& operator=(const StepWalk&) = delete;

  // Step `records.size()`... of every run: `records[k]` is trace k's record of the next step, or
  // null when that run has no more steps. Called for step 0, 1, ... in order.
  void add(const std::vector<const trace::StepRecord*>& records);
  // Everything gathered; the traces' end records must be there by now (they end the outcome and
  // content digests).
  StepFindings finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The walk over `traces` (`compared` points into them): the steps of a trace held whole from
// memory, those of a trace read without them (Trace::steps_in_source) from its file again, a
// record at a time. InputError when a file no longer holds the steps its summary counted. Root
// causes are looked for unless `pair_ops` is false (two programs' records do not pair by
// position: compare/program_alignment.h aligns them).
StepFindings walk_steps(const std::vector<trace::Trace>& traces, const ComparedRuns& compared,
                        bool pair_ops = true);
// The walk over the compared runs only (the phase functions that take a ComparedRuns).
StepFindings walk_compared(const ComparedRuns& compared);

}  // namespace ra::compare::phases
