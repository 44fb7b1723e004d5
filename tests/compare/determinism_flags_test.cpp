// Runs that set a framework's determinism switches differently are not repeats of one
// configuration: determinism_flags_warning names each switch and which runs had which value.
#include <catch2/catch.hpp>

#include <vector>

#include "compare/compare_phases.h"
#include "trace/in_memory_traces.h"

TEST_CASE("determinism_flags_warning names the switches the runs set differently", "[compare]") {
  ra::test::TraceBuilder b;
  b.environment["deterministic_algorithms"] = false;
  b.environment["cudnn_benchmark"] = true;
  std::vector<ra::trace::Trace> traces = {b.build(0), b.build(1), b.build(2)};
  CHECK_FALSE(ra::compare::phases::determinism_flags_warning(traces));

  traces[1].header.environment["deterministic_algorithms"] = true;
  traces[2].header.environment["cublas_workspace_config"] = ":4096:8";
  const auto w = ra::compare::phases::determinism_flags_warning(traces);
  REQUIRE(w);
  CHECK(*w ==
        "the runs did not set the determinism switches alike (deterministic_algorithms: false "
        "(runs 0,2), true (run 1); cublas_workspace_config: null (runs 0,1), \":4096:8\" (run 2)): "
        "they are different configurations, not repeats of one; set the switches once, before "
        "the model is built");
}

TEST_CASE("determinism_flags_warning: none where a trace has no switches", "[compare]") {
  const ra::test::TraceBuilder engine;
  CHECK_FALSE(ra::compare::phases::determinism_flags_warning({engine.build(0), engine.build(1)}));
  // A cross-check, the engine's run against a PyTorch one: two implementations, not two
  // settings of one (the environment differences name them).
  ra::test::TraceBuilder pytorch;
  pytorch.environment["deterministic_algorithms"] = true;
  CHECK_FALSE(ra::compare::phases::determinism_flags_warning({engine.build(0), pytorch.build(1)}));
}
