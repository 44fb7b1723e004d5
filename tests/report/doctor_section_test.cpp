// doctor's readers agree (report/doctor_section.h): the exit status the process returns
// (compare::findings_exit_code over the findings, as cmd_doctor returns it), the text's verdict
// line and its count of obstacles, and the JSON's "clear" say one thing, for a run with nothing in
// the way, obstacles alone, a precision note alone and both. A precision note alone once made the
// text say "1 obstacle to identical runs (exit 1)" where the process exited 0 and the JSON said
// "clear": true.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compare/doctor_checks.h"
#include "report/doctor_section.h"
#include "trace/in_memory_traces.h"

using Catch::Matchers::Contains;
using ra::compare::CheckOutcome;
using ra::compare::Finding;

namespace {

// A PyTorch run on a GPU with its switches set (nothing in the way), then `environment` on top.
ra::trace::Trace gpu_run_with(const nlohmann::json& environment) {
  ra::trace::Trace t = ra::test::TraceBuilder{}.build(0);
  t.header.backend = "pytorch-cuda";
  t.header.seeded = {{"seed", 7}, {"torch_initial_seed", 7}};
  t.header.environment = {{"gpu", "NVIDIA A100-SXM4-40GB"},
                          {"deterministic_algorithms", true},
                          {"cudnn_benchmark", false},
                          {"cudnn_deterministic", true},
                          {"cublas_workspace_config", ":4096:8"}};
  t.header.environment.update(environment);
  return t;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Exit status, text and JSON of one report hold one verdict.
void check_readers_agree(const ra::compare::DoctorReport& r) {
  const int exit_code = ra::compare::findings_exit_code(r.findings);
  const std::string text = ra::report::doctor_text(r);
  const nlohmann::json json = ra::report::doctor_json(r);
  INFO(text);
  std::size_t obstacles = 0, notes = 0;
  for (const Finding& f : r.findings) ++(f.outcome == CheckOutcome::failed ? obstacles : notes);
  CHECK(exit_code == (obstacles > 0 ? 1 : 0));
  CHECK(json["clear"] == (exit_code == 0));
  CHECK(json["findings"].size() == r.findings.size());
  CHECK(occurrences(text, "(exit ") == 1);
  CHECK(occurrences(text, "(exit " + std::to_string(exit_code) + ")") == 1);
  CHECK((occurrences(text, "NOTHING IN THE WAY") == 1) == (exit_code == 0));
  if (obstacles > 0) {
    CHECK_THAT(text,
               Contains(std::to_string(obstacles) + (obstacles == 1 ? " obstacle" : " obstacles") +
                        " to identical runs (exit 1):\n"));
  }
  CHECK((occurrences(text, "to identical runs:\n") == 1) == (notes > 0));
  // Every finding listed once; the notes after their own heading, below the obstacles.
  const std::size_t notes_at = text.find(" to identical runs:\n");
  for (const Finding& f : r.findings) {
    const std::string line = "  [" + f.id + "] " + ra::compare::doctor_facts(f)->what + "\n";
    REQUIRE(occurrences(text, line) == 1);
    CHECK((text.find(line) > notes_at && notes_at != std::string::npos) ==
          (f.outcome != CheckOutcome::failed));
  }
}

}  // namespace

TEST_CASE("doctor: exit status, text and JSON say one verdict", "[report][doctor]") {
  SECTION("nothing in the way") {
    check_readers_agree(
        ra::compare::doctor_report(gpu_run_with(nlohmann::json::object()), "train", "t.jsonl"));
  }
  SECTION("a precision note alone: nothing in the way, exit 0") {
    const auto r =
        ra::compare::doctor_report(gpu_run_with({{"cudnn_allow_tf32", true}}), "train", "t.jsonl");
    REQUIRE(r.findings.size() == 1);
    REQUIRE(r.findings[0].outcome == CheckOutcome::allowed);
    check_readers_agree(r);
    CHECK_THAT(ra::report::doctor_text(r),
               Contains("among the recorded ones (exit 0)\n1 note, no obstacle to identical "
                        "runs:\n  [precision] TF32 is allowed (torch.backends.cudnn.allow_tf32)"));
    CHECK(ra::report::doctor_json(r)["clear"] == true);
  }
  SECTION("precision notes beside obstacles: the notes not counted as obstacles") {
    const auto r = ra::compare::doctor_report(
        gpu_run_with({{"matmul_allow_tf32", true}, {"cudnn_benchmark", true}}), "train", "t.jsonl");
    check_readers_agree(r);
    CHECK_THAT(ra::report::doctor_text(r),
               Contains("1 obstacle to identical runs (exit 1):\n  [switch] "));
  }
  SECTION("obstacles alone") {
    check_readers_agree(ra::compare::doctor_report(
        gpu_run_with({{"cudnn_deterministic", false}, {"cublas_workspace_config", nullptr}}),
        "train", "t.jsonl"));
  }
}
