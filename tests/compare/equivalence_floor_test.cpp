// Two programs judged against the floor (compare/equivalence_floor.h, the finding in
// compare/equivalence_finding.cpp): the curve against distances worked out by hand in doubles,
// the roles and the refusals, and the finding's three outcomes through compare_traces on traces
// built in memory, each with its exit code.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "compare/compare.h"
#include "compare/equivalence_floor.h"
#include "compare/equivalent_programs.h"
#include "compare/verdict.h"
#include "core/error.h"
#include "trace/in_memory_traces.h"

using Catch::Matchers::Contains;
using ra::compare::CheckOutcome;

namespace {

// One unit in the last place of a float of size |x|, computed apart from the code under test:
// 2^(exponent - 23) for a normal float.
double spacing(float x) {
  int exponent = 0;
  std::frexp(std::fabs(x), &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, exponent - 24);
}

const ra::compare::Finding* equivalence_of(const ra::compare::ComparisonResult& r) {
  for (const auto& f : r.findings) {
    if (f.id == "equivalence") return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the equivalence curve: distances, the floor's running widest and the first step beyond",
          "[compare][equivalence]") {
  const std::vector<float> a = {2.0f, 1.5f, 1.25f, 1.0f, 0.75f};
  const std::vector<float> b = {2.0f, 1.5f + 1e-6f, 1.25f, 1.0f + 5e-5f, 0.75f};
  const std::vector<std::vector<float>> floors = {{2.0f, 1.5f + 2e-6f, 1.25f, 1.0f, 0.75f},
                                                  {2.0f, 1.5f, 1.25f, 1.0f + 1e-6f, 0.75f}};
  const auto c = ra::compare::equivalence_curve(a, b, floors, 10.0);
  REQUIRE(c.steps.size() == 5);
  // Step 0: nothing differs; the floor is one ulp of 2.0 (2^-22).
  CHECK(c.distance[0] == 0.0);
  CHECK(c.measured_floor[0] == 0.0);
  CHECK(c.floor[0] == spacing(2.0f));
  // Step 1: the first floor run parts by what 1.5 + 2e-6 rounds to.
  const double floor1 = static_cast<double>(1.5f + 2e-6f) - 1.5;
  CHECK(c.measured_floor[1] == floor1);
  CHECK(c.floor[1] == floor1);
  CHECK(c.distance[1] == static_cast<double>(1.5f + 1e-6f) - 1.5);
  // Step 2: no run differs, and the floor keeps the widest so far.
  CHECK(c.measured_floor[2] == 0.0);
  CHECK(c.floor[2] == floor1);
  // Step 3: B is 5e-5 off, over ten floors: beyond from here.
  REQUIRE(c.beyond_from == std::size_t{3});
  const double distance3 = static_cast<double>(1.0f + 5e-5f) - 1.0;
  CHECK(c.distance[3] == distance3);
  CHECK(c.ratio == Approx(distance3 / floor1).epsilon(1e-12));
  CHECK(c.ratio_at == 3);
  CHECK(c.floor_seen);
}

TEST_CASE("the equivalence curve: within the margin, the largest ratio, a loss that is not finite",
          "[compare][equivalence]") {
  const std::vector<float> a = {1.0f, 1.0f, 1.0f};
  const std::vector<float> floor_run = {1.0f, 1.0f + 4 * 1.1920929e-7f, 1.0f};
  SECTION("within") {
    const std::vector<float> b = {1.0f, 1.0f + 8 * 1.1920929e-7f, 1.0f + 1.1920929e-7f};
    const auto c = ra::compare::equivalence_curve(a, b, {floor_run}, 10.0);
    CHECK_FALSE(c.beyond_from);
    CHECK(c.ratio == Approx(2.0));  // 8 ulp against a floor of 4
    CHECK(c.ratio_at == 1);
  }
  SECTION("B's loss is NaN where A's is not: beyond at once") {
    const std::vector<float> b = {std::numeric_limits<float>::quiet_NaN(), 1.0f, 1.0f};
    const auto c = ra::compare::equivalence_curve(a, b, {floor_run}, 10.0);
    CHECK(c.beyond_from == std::size_t{0});
    CHECK(std::isinf(c.distance[0]));
  }
  SECTION("the shortest run decides the steps compared") {
    const auto c = ra::compare::equivalence_curve(a, {1.0f, 1.0f}, {floor_run}, 10.0);
    CHECK(c.steps == std::vector<std::int64_t>{0, 1});
  }
}

TEST_CASE("B within the floor passes, beyond it fails with the step and the factor",
          "[compare][equivalence]") {
  SECTION("within: B moves as little as the floor run") {
    const auto r = ra::compare::compare_traces(
        ra::test::equivalent_programs({0, 1, 2, 2, 3, 4}, {0, 1, 3, 2, 4, 4}),
        ra::test::expect_equivalent());
    const auto* f = equivalence_of(r);
    REQUIRE(f);
    CHECK(f->outcome == CheckOutcome::passed);
    CHECK_THAT(f->summary, Contains("within the floor through step 5"));
    CHECK(f->data["beyond_from"].is_null());
    CHECK(f->data["floor_runs"] == std::vector<int>{2});
    CHECK(ra::compare::audit_verdict(r).exit_code() == 0);
    CHECK_FALSE(f->plot.curves.empty());
  }
  SECTION("beyond: B is 400 ulp off from step 3, the floor at most 4") {
    const auto r = ra::compare::compare_traces(
        ra::test::equivalent_programs({0, 1, 2, 400, 400, 400}, {0, 1, 3, 2, 4, 4}),
        ra::test::expect_equivalent());
    const auto* f = equivalence_of(r);
    REQUIRE(f);
    CHECK(f->outcome == CheckOutcome::failed);
    CHECK_THAT(f->summary, Contains("beyond the floor from step 3") && Contains("133x the floor"));
    CHECK(f->data["beyond_from"] == 3);
    CHECK(ra::compare::audit_verdict(r).exit_code() == 1);
    // No re-run of one program's audit is advised for two programs.
    CHECK_FALSE(r.next_step.trace_ops);
  }
}

TEST_CASE("floor runs whose outcome is A's to the bit leave the equivalence inconclusive",
          "[compare][equivalence]") {
  auto traces = ra::test::equivalent_programs({0, 1, 2, 2, 3, 4}, {0, 0, 0, 0, 0, 0});
  ra::test::TraceBuilder builder;
  builder.steps = 6;
  traces[2] = builder.build(2);  // A again, bit for bit
  const auto r = ra::compare::compare_traces(traces, ra::test::expect_equivalent());
  const auto* f = equivalence_of(r);
  REQUIRE(f);
  CHECK(f->outcome == CheckOutcome::inconclusive);
  CHECK_THAT(f->summary, Contains("no floor was measured"));
  CHECK(ra::compare::audit_verdict(r).exit_code() == 6);
}

TEST_CASE("a floor that cannot be measured, or a floor run that is not A's, is refused",
          "[compare][equivalence]") {
  auto traces = ra::test::equivalent_programs({0, 1, 2, 2, 3, 4}, {0, 1, 3, 2, 4, 4});
  SECTION("A and B alone") {
    traces.pop_back();
    CHECK_THROWS_WITH(ra::compare::compare_traces(traces, ra::test::expect_equivalent()),
                      Contains("needs a floor") && Contains("2 trace(s) given"));
  }
  SECTION("a floor run of another spec, not perturbed") {
    traces[2].header.spec_digest = "another-spec-digest-000000000000";
    CHECK_THROWS_WITH(ra::compare::compare_traces(traces, ra::test::expect_equivalent()),
                      Contains("cannot be a floor run of A"));
  }
  SECTION("a floor run under other seeds") {
    traces[2].header.seed_init = 7;
    CHECK_THROWS_WITH(ra::compare::compare_traces(traces, ra::test::expect_equivalent()),
                      Contains("ran under other seeds than A"));
  }
  SECTION("parameters of B that do not pair up with A's") {
    traces[1].header.params[2].name = "head.weight";
    CHECK_THROWS_WITH(
        ra::compare::compare_traces(traces, ra::test::expect_equivalent()),
        Contains("do not pair up by name (--expect equivalent") && Contains("head.weight"));
  }
  SECTION("with --align") {
    auto o = ra::test::expect_equivalent();
    o.align = true;
    CHECK_THROWS_WITH(ra::compare::compare_traces(traces, o), Contains("--align and --expect"));
  }
}

namespace {

ra::compare::NamedTensors parameters(float w0, float w1, float bias) {
  ra::Tensor w(ra::Shape{2});
  w.data()[0] = w0;
  w.data()[1] = w1;
  ra::Tensor b(ra::Shape{1});
  b.data()[0] = bias;
  ra::compare::NamedTensors out;
  out.emplace_back("dense.weight", std::move(w));
  out.emplace_back("dense.bias", std::move(b));
  return out;
}

}  // namespace

TEST_CASE("the parameter floor: per parameter, the floor's widest so far and the first beyond",
          "[compare][equivalence]") {
  std::vector<ra::compare::ParameterPoint> points(2);
  points[0].step = 0;
  points[0].a = parameters(1.0f, -2.0f, 0.5f);
  points[0].b = parameters(1.0f, -2.0f + 1e-6f, 0.5f);
  points[0].floor_runs.push_back(parameters(1.0f + 4e-6f, -2.0f, 0.5f));
  points[1].step = 1;
  points[1].a = parameters(0.5f, -1.0f, 0.25f);
  points[1].b = parameters(0.5f, -1.0f, 0.25f + 1e-3f);
  points[1].floor_runs.push_back(parameters(0.5f, -1.0f, 0.25f));
  const auto p = ra::compare::parameter_floor(points, 10.0);
  CHECK(p.steps == std::vector<std::int64_t>{0, 1});
  CHECK(p.tensors == 2);
  // The bias parts by 1e-3 after step 1; its floor: the floor run never moved it, so one ulp of
  // 0.25 (2^-25).
  REQUIRE(p.beyond);
  CHECK(p.beyond->step == 1);
  CHECK(p.beyond->tensor == "dense.bias");
  CHECK(p.beyond->distance == static_cast<double>(0.25f + 1e-3f) - 0.25);
  CHECK(p.beyond->floor == spacing(0.25f));
  // After step 0 the weight's distance (what -2 + 1e-6 rounds to) is under its floor (1 + 4e-6's).
  SECTION("within: the widest ratio") {
    points.pop_back();
    const auto q = ra::compare::parameter_floor(points, 10.0);
    CHECK_FALSE(q.beyond);
    REQUIRE(q.widest);
    CHECK(q.widest->tensor == "dense.weight");
    CHECK(q.widest->distance == static_cast<double>(-2.0f + 1e-6f) + 2.0);
    CHECK(q.widest->floor == static_cast<double>(1.0f + 4e-6f) - 1.0);
  }
  SECTION("a snapshot of other parameters is refused") {
    points[1].b.pop_back();
    CHECK_THROWS_WITH(ra::compare::parameter_floor(points, 10.0),
                      Contains("after step 1 of B holds other parameters"));
  }
}
