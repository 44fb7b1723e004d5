// World size as a configuration (compare/data_parallel.h WorldSizes): a 1-process run against a
// data-parallel one of the same global batch is compared, their difference localised and not
// called a divergence; runs of one world size must still agree, and their specs still match.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "core/error.h"
#include "trace/in_memory_traces.h"

namespace {

using namespace ra::compare;
using namespace ra::trace;
using Catch::Matchers::Contains;

// Run `run` of an exec audit of `world` processes: its spec is its command, which names them.
Trace exec_run(int run, int world) {
  Trace t = ra::test::TraceBuilder{}.build(run);
  t.header.backend = "pytorch-cpu";
  t.header.spec = {{"name", "ddp_train"},
                   {"source", "pytorch"},
                   {"command", world == 1 ? "python3 train.py" : "torchrun train.py"}};
  t.header.spec_digest = world == 1 ? std::string(32, 'a') : std::string(32, 'b');
  if (world > 1) t.header.distributed = RankPlacement{0, world, "gloo", {}};
  return t;
}

ComparisonOptions expect_identity() {
  ComparisonOptions o;
  o.expect_identical = true;
  return o;
}

}  // namespace

TEST_CASE("a 1-process run against a 2-process one differs as a configuration", "[compare]") {
  std::vector<Trace> runs{exec_run(0, 1), exec_run(1, 2)};
  ra::test::diverge(runs[1], 2, 1);  // the all-reduce sums a gradient in another order
  const ComparisonResult r = compare_traces(runs, expect_identity());
  REQUIRE(r.world_sizes);
  CHECK(r.world_sizes->of_runs == std::vector<int>{1, 2});
  CHECK(r.world_sizes->identical_within);
  CHECK_FALSE(r.identity.identical);
  CHECK_FALSE(r.diverged());
  REQUIRE(r.first_divergence);
  CHECK(r.first_divergence->category == Category::gradients);
  CHECK(r.first_divergence->step == 2);
  CHECK(r.first_divergence->tensor == "conv2d_0.bias");
  CHECK_FALSE(r.next_step.trace_ops);  // explained: no re-run to localise it
}

TEST_CASE("runs of one world size that differ still diverge", "[compare]") {
  std::vector<Trace> runs{exec_run(0, 1), exec_run(1, 2), exec_run(2, 2)};
  ra::test::diverge(runs[2], 3, 0);
  const ComparisonResult r = compare_traces(runs, expect_identity());
  REQUIRE(r.world_sizes);
  CHECK_FALSE(r.world_sizes->identical_within);
  CHECK(r.diverged());
}

TEST_CASE("runs of one world size give no world-size finding", "[compare]") {
  const std::vector<Trace> runs{exec_run(0, 2), exec_run(1, 2)};
  CHECK_FALSE(compare_traces(runs, expect_identity()).world_sizes);
}

TEST_CASE("other specs are refused within a world size and outside PyTorch runs", "[compare]") {
  std::vector<Trace> runs{exec_run(0, 1), exec_run(1, 2), exec_run(2, 2)};
  runs[2].header.spec_digest = std::string(32, 'c');
  CHECK_THROWS_WITH(compare_traces(runs, expect_identity()),
                    Contains("traces come from different specs") && Contains(std::string(32, 'c')));
  std::vector<Trace> engine{exec_run(0, 1), exec_run(1, 2)};
  engine[1].header.spec.erase("source");
  CHECK_THROWS_WITH(compare_traces(engine, expect_identity()),
                    Contains("traces come from different specs"));
}
