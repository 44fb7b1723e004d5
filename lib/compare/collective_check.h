#pragma once
// The collective as a cause (docs/distributed.md, "The collective"): a data-parallel run's
// gradient buckets, recorded before and after DDP's communication hook on every rank
// (lib/python/repro_audit/collective.py), compared with the reference run's. A bucket whose
// inputs are identical on every rank and whose result is not says the collective varies from
// run to run (its backend, NCCL's algorithm); a bucket whose input already differs on a rank says
// the cause lies inside that rank, before the collective. Bucket layouts that differ (bucket
// order, bucket_cap_mb, another hook) make the digests incomparable, and are named instead.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::compare {

// One rank's buckets of one run: per step, its step number and its collectives in call order.
struct StepBuckets {
  std::int64_t step = 0;
  std::vector<trace::CollectiveRecord> calls;
};

// A run's buckets, one entry per rank (rank 0 first), and the header's hook and bucket cap.
struct RunBuckets {
  int run = 0;
  std::string comm_hook;  // "" when the recorder wrapped no hook: nothing recorded
  std::optional<std::int64_t> bucket_cap_bytes;
  std::vector<std::vector<StepBuckets>> ranks;
};

// The buckets of run `run` (as the report numbers it), from its ranks' traces held with their
// steps.
RunBuckets buckets_of(const std::vector<trace::Trace>& ranks, int run);

// The first bucket (by step, then call) whose inputs or result differ between `reference` and
// `other` on some rank; none when the two agree, or their layouts differ (bucket_layout_difference
// says where) before any digest does.
std::optional<CollectiveDivergence> collective_divergence(const RunBuckets& reference,
                                                          const RunBuckets& other);

// Where `other`'s bucket layout first differs from `reference`'s: the hook, the bucket cap, or a
// step's buckets (their number, order, parameters or size) on some rank; none when they agree.
std::optional<BucketLayoutDifference> bucket_layout_difference(const RunBuckets& reference,
                                                               const RunBuckets& other);

// In words, for the report: the finding with the backend and NCCL settings it depends on.
std::string describe(const CollectiveDivergence& d, const DistributedFindings& f);

}  // namespace ra::compare
