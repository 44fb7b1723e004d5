// The resume check (compare/resume_check.h) on a PyTorch script's resume points (exec
// --interrupt-at): the pieces only a script's checkpoint has (buffers, the LR scheduler, the
// GradScaler) and its global RNG streams are compared and named; a verdict knows a script's
// checkpoint from the engine's by the reference run's backend.
#include <catch2/catch.hpp>

#include <vector>

#include "compare/compare.h"
#include "trace/in_memory_traces.h"

using ra::compare::ResumePiece;
using ra::test::made_up_digest;
using ra::trace::ResumePoint;
using ra::trace::Trace;

namespace {

ResumePoint script_point(bool resumed) {
  ResumePoint p;
  p.step = 2;
  p.resumed = resumed;
  p.state.weights = made_up_digest(40, 2, 0);
  p.state.optimizer_state = made_up_digest(41, 2, 0);
  p.state.schedule = made_up_digest(42, 2, 0);
  p.state.rng_streams = {{"numpy", made_up_digest(43, 2, 0)},
                         {"python_random", made_up_digest(44, 2, 0)},
                         {"torch", made_up_digest(45, 2, 0)}};
  p.state.next_batch = made_up_digest(46, 2, 0);
  p.state.buffers = made_up_digest(47, 2, 0);
  p.state.lr_scheduler = made_up_digest(48, 2, 0);
  p.state.grad_scaler = made_up_digest(49, 2, 0);
  return p;
}

std::vector<Trace> pytorch_runs(const ResumePoint& resumed) {
  ra::test::TraceBuilder b;
  std::vector<Trace> traces{b.build(0), b.build(1)};
  for (Trace& t : traces) t.header.backend = "pytorch-cpu";
  traces[0].resume_points = {script_point(false)};
  traces[1].resume_points = {resumed};
  return traces;
}

}  // namespace

TEST_CASE("a script's exact resume has every piece equal and is a script's checkpoint",
          "[compare]") {
  const auto verdicts = ra::compare::check_resumes(pytorch_runs(script_point(true)), {});
  REQUIRE(verdicts.size() == 1);
  REQUIRE(verdicts[0].exact());
  REQUIRE(verdicts[0].script_checkpoint);
}

TEST_CASE("a script's resume names its buffers and scheduler and scaler and torch stream",
          "[compare]") {
  ResumePoint resumed = script_point(true);
  resumed.state.buffers = ra::test::changed(*resumed.state.buffers);
  resumed.state.lr_scheduler.reset();  // recorded by run 0, not by the resumed run: differs
  resumed.state.grad_scaler = ra::test::changed(*resumed.state.grad_scaler);
  resumed.state.rng_streams[2].second = ra::test::changed(resumed.state.rng_streams[2].second);
  const auto verdicts = ra::compare::check_resumes(pytorch_runs(resumed), {});
  REQUIRE(verdicts.size() == 1);
  REQUIRE(verdicts[0].differing ==
          std::vector<ResumePiece>{
              {"buffers", ""}, {"lr_scheduler", ""}, {"grad_scaler", ""}, {"rng_stream", "torch"}});
}

TEST_CASE("pieces the reference did not record are not compared", "[compare]") {
  auto traces = pytorch_runs(script_point(true));
  traces[0].resume_points[0].state.lr_scheduler.reset();  // the script named no scheduler
  traces[0].resume_points[0].state.grad_scaler.reset();
  traces[0].header.backend = "cpu";  // the engine's: not a script's checkpoint
  const auto verdicts = ra::compare::check_resumes(traces, {});
  REQUIRE(verdicts.size() == 1);
  REQUIRE(verdicts[0].exact());
  REQUIRE_FALSE(verdicts[0].script_checkpoint);
}
