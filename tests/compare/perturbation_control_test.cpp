// The perturbation control (compare/checks.h, compare/perturbation_control.cpp) on traces built
// in memory: a perturbed run's flip seen passes; a run that recorded no flip, or whose flip left
// its initial weights the reference's, makes the audit inconclusive (exit 6) whatever the
// same-seed runs did; without a perturbed group the check does not apply.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compare/compare.h"
#include "compare/verdict.h"
#include "core/error.h"
#include "trace/in_memory_traces.h"

using Catch::Matchers::Contains;

namespace {

// Two same-seed runs and two perturbed ones, each flipping bit 0 of dense_1.weight (param 2).
std::vector<ra::trace::Trace> audit_with_perturbed_runs() {
  ra::test::TraceBuilder same;
  ra::test::TraceBuilder perturbed = same;
  perturbed.seed_group = "perturbed";
  std::vector<ra::trace::Trace> traces = {same.build(0), same.build(1), perturbed.build(2),
                                          perturbed.build(3)};
  for (int i : {2, 3}) {
    traces[i].header.perturbation = ra::trace::Perturbation{"dense_1.weight", i, 0, 2, 3};
    traces[i].initial_weights[2] = ra::test::changed(traces[i].initial_weights[2]);
    ra::test::diverge(traces[i], 0, 2);
  }
  return traces;
}

const ra::compare::Finding* control_of(const ra::compare::ComparisonResult& r) {
  for (const auto& f : r.findings) {
    if (f.id == "perturbation_control") return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("perturbed runs whose flips were seen pass the control", "[compare][checks]") {
  const auto r = ra::compare::compare_traces(audit_with_perturbed_runs(), {});
  const ra::compare::Finding* f = control_of(r);
  REQUIRE(f);
  CHECK(f->outcome == ra::compare::CheckOutcome::passed);
  CHECK_THAT(f->summary, Contains("seen") && Contains("2 run(s)"));
  REQUIRE(f->table.rows.size() == 2);
  CHECK(f->table.rows[0] ==
        std::vector<std::string>{"2", "bit 0 of dense_1.weight[2]", "yes", "differs"});
  CHECK(ra::compare::audit_verdict(r).exit_code() == 0);
}

TEST_CASE("a flip the audit did not see makes it inconclusive", "[compare][checks]") {
  auto traces = audit_with_perturbed_runs();
  SECTION("a perturbed run with the reference's initial weights") {
    traces[3].initial_weights = traces[0].initial_weights;
  }
  SECTION("a perturbed run that recorded no flip") {
    traces[3].header.perturbation.reset();
  }
  const auto r = ra::compare::compare_traces(traces, {});
  const ra::compare::Finding* f = control_of(r);
  REQUIRE(f);
  CHECK(f->outcome == ra::compare::CheckOutcome::inconclusive);
  CHECK_THAT(f->summary, Contains("1 of 2 perturbed run(s)"));
  const auto v = ra::compare::audit_verdict(r);
  CHECK(v.status == ra::compare::AuditStatus::inconclusive);
  CHECK(v.exit_code() == static_cast<int>(ra::ExitCode::inconclusive));
  CHECK(r.identity.identical);  // the same-seed runs agree; the control is what is missing
}

TEST_CASE("without a perturbed group the control does not apply", "[compare][checks]") {
  const auto r = ra::compare::compare_traces(ra::test::runs_of(ra::test::TraceBuilder{}, 2), {});
  CHECK(ra::compare::finding_of(r.findings, "perturbation_control") == nullptr);
}

TEST_CASE("the control compares perturbed runs with the reference, whatever their order",
          "[compare][checks]") {
  // The perturbed runs given first (compare PERTURBED... SAME...): the reference is the first
  // same-seed run, as the instability finding says, not run 0. The control read the instability's
  // finding before it was made (ComparisonResult::findings is filled after the last check), so it
  // compared run 0 with itself and called its flip unseen: it reads it from the earlier findings.
  auto traces = audit_with_perturbed_runs();
  std::rotate(traces.begin(), traces.begin() + 2, traces.end());
  for (std::size_t i = 0; i < traces.size(); ++i) traces[i].header.run_index = static_cast<int>(i);
  const auto r = ra::compare::compare_traces(traces, {});
  const ra::compare::Finding* f = control_of(r);
  REQUIRE(f);
  CHECK(f->outcome == ra::compare::CheckOutcome::passed);
  REQUIRE(f->table.rows.size() == 2);
  CHECK(f->table.rows[0][0] == "0");
  CHECK(f->table.rows[0][2] == "yes");
  CHECK(ra::compare::audit_verdict(r).exit_code() == 0);
}
