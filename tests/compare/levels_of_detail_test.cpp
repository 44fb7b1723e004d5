// Comparisons of traces with a level of detail (trace/tensor_digests.h): at a step some run
// recorded one digest per category, gradients, weights and buffers compare as one digest each; the
// first divergence there says so and the next step records that step per tensor. A run recorded
// per tensor and the same run recorded per category have one outcome.
#include <catch2/catch.hpp>
#include <vector>

#include "compare/compare.h"
#include "trace/in_memory_traces.h"
#include "trace/tensor_digests.h"

namespace {

using namespace ra::compare;
using namespace ra::trace;
using ra::test::diverge;
using ra::test::TraceBuilder;

// `t` as a version 4 trace of `plan`: the steps outside it hold one digest per category.
void record_with_detail(Trace& t, const TensorDigestPlan& plan) {
  t.header.format_version = kTraceFormatVersionWithDetail;
  t.header.tensor_digests = plan;
  for (StepRecord& r : t.steps) {
    if (!plan.at(r.step)) keep_category_digests(r);
  }
}

const CategoryVerdict& verdict(const ComparisonResult& r, Category c) {
  for (const CategoryVerdict& v : r.categories)
    if (v.category == c) return v;
  FAIL("no verdict");
  return r.categories.front();
}

}  // namespace

TEST_CASE("a divergence at a step recorded per category is found there, as one digest",
          "[compare][detail]") {
  TraceBuilder b;
  b.steps = 8;
  b.steps_per_epoch = 4;
  std::vector<Trace> traces{b.build(0), b.build(1), b.build(2)};
  diverge(traces[1], 5, 1);
  for (Trace& t : traces) record_with_detail(t, {4, {}});  // per tensor at steps 0 and 4
  const ComparisonResult r = compare_traces(traces, {});

  REQUIRE_FALSE(r.identity.identical);
  REQUIRE(r.first_divergence);
  CHECK(r.first_divergence->step == 5);
  CHECK(r.first_divergence->category == Category::gradients);
  CHECK(r.first_divergence->per_category);
  CHECK(r.first_divergence->tensor.empty());
  CHECK(r.first_divergence->tensor_digests == "every:4");
  CHECK(r.first_divergence->runs_differing == std::vector<int>{1});
  CHECK(verdict(r, Category::weights).steps_differing == 3);  // steps 5, 6, 7
  // The next step records step 5's ops and its tensors.
  REQUIRE(r.next_step.trace_ops);
  CHECK(r.next_step.trace_ops->first == 5);
  CHECK(r.next_step.tensor_digests);
  // The epochs' ends (steps 3 and 7) held one digest per category: no count of parameters.
  REQUIRE(r.growth.epochs.size() == 2);
  CHECK_FALSE(r.growth.epochs[1].weights_differing.has_value());
  // The map's rows stay one per tensor: at a per-category step each shows its category's verdict.
  for (const StepSeries::Row& row : r.growth.steps.rows) {
    if (row.category != Category::weights) continue;
    REQUIRE(row.differs.size() == 8);
    CHECK(row.differs[5]);
    CHECK_FALSE(row.differs[4]);
  }
  CHECK(r.identity.classes.size() == 2);
}

TEST_CASE("a step recorded per tensor names the tensor, as before", "[compare][detail]") {
  TraceBuilder b;
  b.steps = 8;
  b.steps_per_epoch = 4;
  std::vector<Trace> traces{b.build(0), b.build(1)};
  diverge(traces[1], 5, 1);
  for (Trace& t : traces) record_with_detail(t, {4, {{5, 6}}});  // and step 5: the re-run's
  const ComparisonResult r = compare_traces(traces, {});
  REQUIRE(r.first_divergence);
  CHECK(r.first_divergence->step == 5);
  CHECK_FALSE(r.first_divergence->per_category);
  CHECK(r.first_divergence->tensor == b.params[1]);
  CHECK_FALSE(r.next_step.tensor_digests);
}

TEST_CASE("the same run recorded per tensor and per category is one outcome", "[compare][detail]") {
  TraceBuilder b;
  b.steps = 6;
  std::vector<Trace> traces{b.build(0), b.build(1), b.build(2)};
  record_with_detail(traces[1], {std::nullopt, {}});  // every step per category
  record_with_detail(traces[2], {3, {}});
  const ComparisonResult r = compare_traces(traces, {});
  CHECK(r.identity.identical);
  CHECK(r.identity.classes.size() == 1);
  CHECK_FALSE(r.first_divergence);
}
