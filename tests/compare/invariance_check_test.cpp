// Batch invariance from a sweep (compare/invariance_check.h, compare/invariance_finding.h): the
// verdict, the first failing probe, the first op to part, the magnitude in ULPs (counted here
// with std::nextafter, independently of compare/statistics.h) and the control that makes an
// "invariant" a proven one (the report forms: tests/report/findings_report_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "compare/invariance_check.h"
#include "compare/invariance_finding.h"
#include "core/error.h"

using Catch::Matchers::Contains;
using namespace ra::compare;
using ra::trace::InvarianceOp;
using ra::trace::InvarianceProbe;
using ra::trace::InvarianceSweep;
using ra::trace::RowDigest;

namespace {

ra::Digest128 digest_of(std::uint64_t n) {
  return ra::Digest128{n, 0xabcu};
}

// A two-op model (a matrix product in "fc", then a relu) whose anchor row digests are `x`
// (input), `mm` (after fc) and `out` (after relu); the weight is whole.
InvarianceProbe probe(int size, int row, std::uint64_t mm, std::uint64_t out,
                      std::vector<float> values, bool control = false) {
  InvarianceProbe p;
  p.config = {size, row, row == 0 ? "first" : "last", size == 1 ? "" : "batch", control};
  InvarianceOp fc{"aten.addmm.default",
                  "fc",
                  {{digest_of(1), false}, {digest_of(2), true}},
                  RowDigest{digest_of(mm)}};
  InvarianceOp relu{
      "aten.relu.default", "act", {{digest_of(mm), false}}, RowDigest{digest_of(out)}};
  p.ops = {fc, relu};
  p.output_digest = digest_of(out);
  p.output_values = std::move(values);
  return p;
}

const std::vector<float> kRef = {1.0f, -2.0f, 0.5f};

std::vector<float> moved(int ulps) {
  std::vector<float> v = kRef;
  for (int i = 0; i < ulps; ++i) v[2] = std::nextafter(v[2], 1.0f);
  return v;
}

// The anchor alone, sizes 2..4 at both ends equal to it, and a detected control at size 2.
InvarianceSweep invariant_sweep() {
  InvarianceSweep s;
  s.source = "pytorch";
  s.model = "Net";
  s.device = "cpu";
  s.dtype = "torch.float32";
  s.reference = probe(1, 0, 10, 20, kRef);
  for (int size = 2; size <= 4; ++size) {
    s.probes.push_back(probe(size, 0, 10, 20, kRef));
    s.probes.push_back(probe(size, size - 1, 10, 20, kRef));
  }
  s.probes.push_back(probe(2, 0, 11, 21, moved(1), true));
  s.control = ra::trace::InvarianceControl{0, "aten.addmm.default", "fc"};
  return s;
}

int exit_code_of(const Finding& f) {
  return findings_exit_code({f});
}

}  // namespace

TEST_CASE("an invariant sweep whose control was seen passes", "[compare][invariance]") {
  const InvarianceAnalysis a = analyse_invariance(invariant_sweep());
  CHECK(a.invariant);
  CHECK(a.probes.size() == 6);  // the control is not a probe of the verdict
  CHECK(a.control.ran);
  CHECK(a.control.detected);
  CHECK(a.control.reached_output);
  const Finding f = invariance_finding(a, {});
  CHECK(f.outcome == CheckOutcome::passed);
  CHECK_THAT(f.summary, Contains("INVARIANT") && Contains("all 6 probe(s)"));
  CHECK(exit_code_of(f) == 0);
}

TEST_CASE("an invariant sweep without a seen control is inconclusive", "[compare][invariance]") {
  InvarianceSweep s = invariant_sweep();
  SECTION("no control ran") {
    s.control.reset();
    s.probes.pop_back();
  }
  SECTION("the control's change did not show at its op") {
    s.probes.back() = probe(2, 0, 10, 20, kRef, true);
  }
  SECTION("only the anchor alone") {
    s.probes.clear();
  }
  const Finding f = invariance_finding(analyse_invariance(s), {});
  CHECK(f.outcome == CheckOutcome::inconclusive);
  CHECK_THAT(f.summary, Contains("INCONCLUSIVE"));
  CHECK(exit_code_of(f) == static_cast<int>(ra::ExitCode::inconclusive));
}

TEST_CASE("a batch-dependent op is found and named", "[compare][invariance]") {
  InvarianceSweep s = invariant_sweep();
  // At size 3 (last) and 4 (first, then last) fc writes another row from the same inputs; size 4
  // comes first in the sweep, but the first failing probe is the smallest size.
  s.probes.insert(s.probes.begin(), probe(4, 0, 30, 31, moved(3)));
  s.probes[4] = probe(3, 0, 40, 41, moved(2));
  const InvarianceAnalysis a = analyse_invariance(s);
  CHECK_FALSE(a.invariant);
  REQUIRE(a.first_failing);
  const ProbeOutcome& first = a.probes[*a.first_failing];
  CHECK(first.config.batch_size == 3);
  REQUIRE(first.difference);
  CHECK(first.difference->differing == 1);
  CHECK(first.difference->max_ulp == 2);
  REQUIRE(first.first_break);
  CHECK(first.first_break->output_differs);
  CHECK(first.first_break->op == "aten.addmm.default");
  CHECK(first.first_break->module == "fc");
  CHECK(first.first_break->op_index == 0);
  REQUIRE(a.breaking_ops.size() == 1);
  CHECK(a.breaking_ops[0].probes == 2);

  const Finding f = invariance_finding(a, {});
  CHECK(f.outcome == CheckOutcome::failed);
  CHECK_THAT(f.summary, Contains("NOT INVARIANT") && Contains("2 of 7") &&
                            Contains("batch size 3") && Contains("2 ULP(s)"));
  CHECK_THAT(f.details[2],
             Contains("aten.addmm.default in fc (op 0)") && Contains("inputs were bitwise equal"));
  CHECK(f.table.rows.size() == 2);
  CHECK(f.data["first_failing"]["batch_size"] == 3);
  CHECK(f.data["first_failing"]["first_break"]["op"] == "aten.addmm.default");
  CHECK(f.next_steps.empty());  // no command of this tool fixes a PyTorch model's op
  CHECK(exit_code_of(f) == 1);

  SECTION("--expect any allows it") {
    const Finding allowed = invariance_finding(a, {false, ""});
    CHECK(allowed.outcome == CheckOutcome::allowed);
    CHECK(exit_code_of(allowed) == 0);
  }
  SECTION("the engine's sweep outside its invariant mode suggests it") {
    InvarianceAnalysis engine = a;
    engine.source = "engine";
    engine.mode = "deterministic";
    const Finding e = invariance_finding(engine, {true, "repro-audit run quick.json --invariance"});
    REQUIRE(e.next_steps.size() == 1);
    CHECK(e.next_steps[0] == "repro-audit run quick.json --invariance --mode batch_invariant");
  }
}

TEST_CASE("another op sequence for a batch size is named as such", "[compare][invariance]") {
  InvarianceSweep s = invariant_sweep();
  s.probes[2].ops[0].op = "aten.mm.default";
  s.probes[2].output_digest = digest_of(99);
  const InvarianceAnalysis a = analyse_invariance(s);
  REQUIRE(a.first_failing);
  const FirstBreak& b = *a.probes[*a.first_failing].first_break;
  CHECK_FALSE(b.output_differs);
  CHECK(b.op == "aten.addmm.default");
  CHECK(b.probe_op == "aten.mm.default");
  CHECK_THAT(invariance_finding(a, {}).details[2], Contains("another kernel path"));
}
