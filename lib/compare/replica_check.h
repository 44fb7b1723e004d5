#pragma once
// Replicas that agree within a data-parallel run (docs/distributed.md): after each optimizer
// step every rank holds bitwise-equal parameters, since each applies the same all-reduced
// gradient to the same weights. What ranks may hold apart is named, never counted against them:
// each rank's batch and loss (its share of the global batch), and buffers (BatchNorm's running
// statistics are per rank under broadcast_buffers=False).
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace ra::compare {

// The first step (-1: the initial weights) and parameter where a rank's weights differ from rank
// 0's, or none. `ranks[r]` is rank r's trace of run `run`, held with its steps (read_trace).
std::optional<ReplicaDivergence> replica_divergence(const std::vector<trace::Trace>& ranks,
                                                    int run);

// What differs between the ranks of a run as data parallelism expects, in words ("buffers differ
// between ranks from step 0: ..."); ranks as replica_divergence's.
std::vector<std::string> expected_rank_differences(const std::vector<trace::Trace>& ranks);

// "replicas desynchronised at step 12 of run 0: rank 1's layer3.weight differs from rank 0's".
std::string describe(const ReplicaDivergence& d);

}  // namespace ra::compare
