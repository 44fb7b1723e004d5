#pragma once
// Two programs and a floor run of the first, made in memory (compare/equivalence_floor.h): what
// the equivalence tests of compare and of the report's readers compare.
#include <cstdint>
#include <vector>

#include "compare/compare.h"
#include "trace/in_memory_traces.h"

namespace ra::test {

// Program A, program B and a floor run of A, 6 steps: B's and the floor's losses are A's plus
// the given offsets (in ulp of A's loss) per step; a floor run is A's with another reduction order,
// so its digests differ from A's from step 0 wherever its loss does.
inline std::vector<trace::Trace> equivalent_programs(const std::vector<int>& b_ulp,
                                                     const std::vector<int>& floor_ulp) {
  TraceBuilder builder;
  builder.steps = 6;
  std::vector<trace::Trace> traces = {builder.build(0), builder.build(1), builder.build(2)};
  traces[1].header.spec_digest = "b-program-spec-digest-0000000000";
  traces[1].source = "b.trace.jsonl";
  for (std::size_t s = 0; s < 6; ++s) {
    traces[1].steps[s].loss_bits += static_cast<std::uint32_t>(b_ulp[s]);
    traces[2].steps[s].loss_bits += static_cast<std::uint32_t>(floor_ulp[s]);
  }
  diverge(traces[1], 0, 0, 0);
  diverge(traces[2], 0, 0, 0);
  for (std::size_t i : {1u, 2u})
    traces[i].final->final_loss_bits = traces[i].steps.back().loss_bits;
  return traces;
}

inline compare::ComparisonOptions expect_equivalent() {
  compare::ComparisonOptions o;
  o.expect_equivalent = true;
  return o;
}

}  // namespace ra::test
