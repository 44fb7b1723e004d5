#pragma once
// Plain types of a data-parallel comparison's findings (docs/distributed.md), apart from
// compare/compare.h: the collective (compare/collective_check.h) and world size as a
// configuration (compare_world_sizes.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::compare {

// The first gradient bucket whose collective differs from the reference run's
// (compare/collective_check.h). `inputs_identical`: every rank's input to the collective was the
// reference run's, and rank `rank`'s result was not: the collective is the cause. Otherwise rank
// `rank`'s input already differed: the cause lies inside that rank, before the collective.
struct CollectiveDivergence {
  int run = 0;
  std::int64_t step = 0;
  std::int64_t bucket = 0;
  std::vector<std::string> params;  // the bucket's, in its order
  std::int64_t elements = 0;
  int rank = 0;
  bool inputs_identical = false;
  std::string comm_hook;  // the hook the bucket went through ("default": DDP's all-reduce)
};

// Where a run's buckets are laid out otherwise than the reference run's, in words: the hook, the
// bucket cap (no `step`), or a step's buckets (order, parameters, size) on rank `rank`.
struct BucketLayoutDifference {
  int run = 0;
  std::optional<std::int64_t> step;
  int rank = 0;
  std::string difference;
};

// Runs of more than one world size (a 1-process audit against a 2-process one of the same
// global batch): world size is a configuration, as a seed is. Rank 0's trace stands for a
// data-parallel run; they differ by design (each rank trains its share of the global batch, and
// the all-reduce sums the gradients in another order), and the report's first divergence says
// where they part first. Runs of one world size must still agree.
struct WorldSizes {
  std::vector<int> of_runs;      // per run, in the report's run order; 1 for a single process
  bool identical_within = true;  // the compared runs of each world size are in one outcome class
  // Each world size came from a command (spec) of its own: a configuration the runs vary on
  // purpose. False when the runs of one command came up with different world sizes (a rank that
  // never started): those runs may not differ, and the audit fails (compare/verdict.h).
  bool configuration = true;
};

}  // namespace ra::compare
