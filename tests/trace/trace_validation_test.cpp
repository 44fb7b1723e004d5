// A trace is whole or it is rejected: a whole trace (as the engine writes it, built in memory:
// tests/trace/whole_trace.h) is edited or damaged in every way the reader checks, and each must be
// an InputError naming the file, the line and the field. (That an audit's own traces read back
// whole: tests/audit/audit_trace_test.cpp; comparing a run with itself:
// tests/audit/duplicate_runs_test.cpp.)
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/temp_dir.h"
#include "support/text_lines.h"
#include "trace/trace_io.h"
#include "trace/whole_trace.h"

namespace {

using ra::test::TempDir;

using ra::test::join_lines;
using ra::test::lines_of;

using nlohmann::json;

// Lines 1 header, 2 init, 3-5 steps, 6 epoch 0, 7-9 steps, 10 epoch 1, 11 end.
constexpr int kHeader = 1, kInit = 2, kFirstStep = 3, kEpoch0 = 6, kLastStep = 9, kEpoch1 = 10,
              kEnd = 11;

// Two runs of one audit, written once for all tests.
const std::filesystem::path& trace_dir() {
  static TempDir dir;
  static const bool written = [] {
    std::filesystem::create_directories(dir.path / "out");
    const std::string audit_id = "0123456789abcdef0123456789abcdef";
    ra::test::write_trace_file(ra::test::two_epoch_trace(0, audit_id, 0.002),
                               dir.path / "out" / "run-000.trace.jsonl");
    ra::test::write_trace_file(ra::test::two_epoch_trace(1, audit_id, 0.003),
                               dir.path / "out" / "run-001.trace.jsonl");
    return true;
  }();
  (void)written;
  return dir.path;
}

std::filesystem::path run_file(int run) {
  return trace_dir() / "out" / (run == 0 ? "run-000.trace.jsonl" : "run-001.trace.jsonl");
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The trace of run 0 with line `line` (1-based) changed by `edit`.
std::string edited(int line, const std::function<void(json&)>& edit) {
  std::vector<std::string> lines = lines_of(read_text(run_file(0)));
  json record = json::parse(lines.at(line - 1));
  edit(record);
  lines[line - 1] = record.dump();
  return join_lines(lines);
}

std::string without_line(const std::string& text, int line) {
  std::vector<std::string> lines = lines_of(text);
  lines.erase(lines.begin() + (line - 1));
  return join_lines(lines);
}

// parse_trace must reject `text`, naming the file, `line`, the field (when given) and `problem`.
void require_rejected(const std::string& text, int line, const std::string& field,
                      const std::string& problem = "") {
  const std::string source = "edited.trace.jsonl";
  try {
    ra::trace::parse_trace(text, source);
    FAIL("the damaged trace was accepted");
  } catch (const ra::InputError& e) {
    const std::string message = e.what();
    INFO(message);
    REQUIRE(message.find(source + ":" + std::to_string(line) + ": ") == 0);
    if (!field.empty()) REQUIRE(message.find("field '" + field + "'") != std::string::npos);
    if (!problem.empty()) REQUIRE(message.find(problem) != std::string::npos);
  }
}

std::string other_digest(const std::string& hex) {
  std::string d = hex;
  d[31] = d[31] == '0' ? '1' : '0';
  return d;
}

}  // namespace

TEST_CASE("a whole trace is read back whole", "[trace]") {
  const auto t = ra::trace::read_trace(run_file(0));
  REQUIRE(lines_of(read_text(run_file(0))).size() == kEnd);
  REQUIRE(t.steps.size() == 6);
  REQUIRE(t.epochs.size() == 2);
  REQUIRE(t.final);
  REQUIRE(t.final->steps == 6);
  REQUIRE(t.header.spec_digest == ra::trace::spec_digest_of(t.header.spec).hex());
  // What the reader reads, the writer writes back byte for byte.
  REQUIRE(ra::trace::serialize_trace(t) == read_text(run_file(0)));
}

TEST_CASE("a trace with step records removed is rejected", "[trace]") {
  const std::string text = read_text(run_file(0));
  SECTION("a step in the middle of an epoch: the next step is out of order") {
    require_rejected(without_line(text, kFirstStep + 1), kFirstStep + 1, "step", "out of order");
  }
  SECTION("the last step of an epoch: its epoch record miscounts") {
    require_rejected(without_line(text, kEpoch0 - 1), kEpoch0 - 1, "steps",
                     "epoch 0 counts 3 steps, but the trace has 2 step records");
  }
  SECTION("the last step, with the epoch record mended: the end record miscounts") {
    std::vector<std::string> lines = lines_of(text);
    json epoch = json::parse(lines[kEpoch1 - 1]);
    epoch["steps"] = 2;
    double sum = 0;
    for (int l = kEpoch0 + 1; l < kLastStep; ++l) {
      sum += std::bit_cast<float>(ra::trace::bits_from_hex(json::parse(lines[l - 1])["loss_bits"]));
    }
    epoch["train_loss"] = sum / 2;
    lines[kEpoch1 - 1] = epoch.dump();
    lines.erase(lines.begin() + (kLastStep - 1));
    require_rejected(join_lines(lines), kEnd - 1, "steps",
                     "the end record counts 6 steps, but the trace has 5 step records");
    // ... and with the count mended too, the final loss and weights are not the last step's.
    json end = json::parse(lines[kEnd - 2]);
    end["steps"] = 5;
    lines[kEnd - 2] = end.dump();
    require_rejected(join_lines(lines), kEnd - 1, "final_loss_bits", "the loss of step 4");
  }
}

TEST_CASE("an end record that disagrees with the steps is rejected", "[trace]") {
  SECTION("steps") {
    require_rejected(edited(kEnd, [](json& r) { r["steps"] = 7; }), kEnd, "steps",
                     "counts 7 steps");
  }
  SECTION("weights") {
    require_rejected(edited(kEnd, [](json& r) { r["weights"][1] = other_digest(r["weights"][1]); }),
                     kEnd, "weights[1]", "is not its digest in step 5");
  }
  SECTION("final loss, its bits and its number changed together") {
    require_rejected(edited(kEnd,
                            [](json& r) {
                              r["final_loss_bits"] = "0x3f800000";
                              r["final_loss"] = 1.0;
                            }),
                     kEnd, "final_loss_bits", "the loss of step 5");
  }
  SECTION("final loss number without its bits") {
    require_rejected(edited(kEnd, [](json& r) { r["final_loss"] = 12.5; }), kEnd, "final_loss",
                     "final_loss_bits");
  }
  SECTION("evaluation") {
    require_rejected(edited(kEnd, [](json& r) { r["eval_accuracy"] = 0.125; }), kEnd,
                     "eval_accuracy", "the last epoch record says");
  }
  SECTION("median step time") {
    require_rejected(edited(kEnd, [](json& r) { r["median_step_seconds"] = 1e-9; }), kEnd,
                     "median_step_seconds", "median of the 6 step times");
  }
  SECTION("the last epoch record removed") {
    require_rejected(without_line(read_text(run_file(0)), kEpoch1), kEnd - 1, "",
                     "epoch 1 has no epoch record");
  }
  SECTION("records after the end") {
    const std::string text = read_text(run_file(0));
    const auto lines = lines_of(text);
    require_rejected(text + lines[kEnd - 1] + "\n", kEnd + 1, "", "after the end record");
  }
}

TEST_CASE("epoch records must agree with the steps", "[trace]") {
  SECTION("epoch numbering") {
    require_rejected(edited(kEpoch0, [](json& r) { r["epoch"] = 1; }), kEpoch0, "epoch",
                     "out of order (expected 0)");
  }
  SECTION("step count") {
    require_rejected(edited(kEpoch0, [](json& r) { r["steps"] = 4; }), kEpoch0, "steps",
                     "counts 4 steps");
  }
  SECTION("mean train loss") {
    require_rejected(
        edited(kEpoch0, [](json& r) { r["train_loss"] = r["train_loss"].get<double>() * 2; }),
        kEpoch0, "train_loss", "mean of the 3 step losses");
  }
  SECTION("a step claiming another epoch") {
    require_rejected(edited(kFirstStep + 1, [](json& r) { r["epoch"] = 1; }), kFirstStep + 1,
                     "epoch", "is in epoch 1");
  }
  SECTION("a batch index out of order") {
    require_rejected(edited(kFirstStep + 1, [](json& r) { r["batch"] = 2; }), kFirstStep + 1,
                     "batch", "out of order (expected 1)");
  }
  SECTION("an epoch record moved after a step of the next epoch") {
    std::vector<std::string> lines = lines_of(read_text(run_file(0)));
    std::swap(lines[kEpoch0 - 1], lines[kEpoch0]);
    require_rejected(join_lines(lines), kEpoch0, "epoch", "is in epoch 1");
  }
  SECTION("a step's loss number without its bits") {
    require_rejected(edited(kFirstStep, [](json& r) { r["loss"] = 3.5; }), kFirstStep, "loss",
                     "loss_bits");
  }
}

TEST_CASE("the spec digest must be the spec's", "[trace]") {
  SECTION("spec changed, digest kept") {
    require_rejected(edited(kHeader, [](json& r) { r["spec"]["seed"] = 10; }), kHeader,
                     "spec_digest", "is not the digest of the header's spec");
  }
  SECTION("digest changed") {
    require_rejected(
        edited(kHeader, [](json& r) { r["spec_digest"] = other_digest(r["spec_digest"]); }),
        kHeader, "spec_digest", "changed after the run");
  }
  SECTION("digest malformed") {
    require_rejected(edited(kHeader, [](json& r) { r["spec_digest"] = "abc"; }), kHeader,
                     "spec_digest", "32 hex digits");
  }
}

TEST_CASE("format_version must be exactly the integer 1, 2, 3 or 4", "[trace]") {
  const auto with_version = [](json v) {
    return edited(kHeader, [&](json& r) { r["format_version"] = v; });
  };
  require_rejected(with_version(1.0), kHeader, "format_version", "found the number 1.0");
  require_rejected(with_version("1"), kHeader, "format_version", "found the string \"1\"");
  require_rejected(with_version(true), kHeader, "format_version", "found true");
  require_rejected(with_version(5), kHeader, "format_version", "trace format version 5");
  require_rejected(with_version(0), kHeader, "format_version", "trace format version 0");
  require_rejected(with_version(json::array({1})), kHeader, "format_version", "found an array");
}

TEST_CASE("every header field must have its type", "[trace]") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* field;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {"determinism array", [](json& h) { h["determinism"] = json::array(); }, "determinism",
       "expected an object, found an array"},
      {"params object", [](json& h) { h["params"] = json::object(); }, "params",
       "expected an array, found an object"},
      {"seeds string", [](json& h) { h["seeds"] = "x"; }, "seeds",
       "expected an object, found the string \"x\""},
      {"negative seed", [](json& h) { h["seeds"]["init"] = -1; }, "seeds.init",
       "found the integer -1"},
      {"seed as float", [](json& h) { h["seeds"]["data"] = 1.5; }, "seeds.data",
       "found the number 1.5"},
      {"threads string", [](json& h) { h["threads"] = "2"; }, "threads", "expected an integer"},
      {"threads zero", [](json& h) { h["threads"] = 0; }, "threads", "in [1, "},
      {"run index float", [](json& h) { h["run_index"] = 0.5; }, "run_index",
       "expected an integer"},
      {"seed group", [](json& h) { h["seed_group"] = "maybe"; }, "seed_group",
       "\"same\", \"different\" or \"perturbed\""},
      {"environment array", [](json& h) { h["environment"] = json::array(); }, "environment",
       "expected an object"},
      {"ledger object", [](json& h) { h["ledger"] = json::object(); }, "ledger",
       "expected an array"},
      {"ledger entry", [](json& h) { h["ledger"] = json::array({json::object()}); },
       "ledger[0].layer", "is missing"},
      {"unknown mode", [](json& h) { h["determinism"]["mode"] = "fast"; }, "determinism.mode",
       "expected deterministic, nondeterministic, autotune or batch_invariant"},
      {"unknown op",
       [](json& h) {
         h["determinism"]["ops"] = {{"conv", "deterministic"}};
       },
       "determinism.ops.conv", "not a reducing op"},
      {"shape element", [](json& h) { h["params"][0]["shape"][1] = "x"; }, "params[0].shape[1]",
       "expected an integer"},
      {"shape zero", [](json& h) { h["params"][1]["shape"][0] = 0; }, "params[1].shape[0]",
       "in [1, "},
      {"parameter named twice", [](json& h) { h["params"][1]["name"] = h["params"][0]["name"]; },
       "params[1].name", "named twice"},
      {"optimizer state name", [](json& h) { h["optimizer_state"][0] = 1; }, "optimizer_state[0]",
       "expected a string"},
      {"fault string", [](json& h) { h["fault"] = "x"; }, "fault", "expected an object"},
      {"fault of another run",
       [](json& h) {
         h["fault"] = {{"run", 1}, {"step", 0}, {"tensor", "batch"}, {"element", 0}, {"bit", 0}};
       },
       "fault.run", "in the trace of run 0"},
      {"tool version number", [](json& h) { h["tool_version"] = 1; }, "tool_version",
       "expected a string"},
      {"spec array", [](json& h) { h["spec"] = json::array(); }, "spec", "expected an object"},
      {"missing seeds", [](json& h) { h.erase("seeds"); }, "seeds", "is missing"},
      {"missing params", [](json& h) { h.erase("params"); }, "params", "is missing"},
      {"record kind number", [](json& h) { h["record"] = 1; }, "record", "expected a string"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    require_rejected(edited(kHeader, c.edit), kHeader, c.field, c.problem);
  }
}

TEST_CASE("every record field must have its type", "[trace]") {
  struct Case {
    int line;
    std::function<void(json&)> edit;
    const char* field;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {kInit, [](json& r) { r["weights"] = "x"; }, "weights", "expected an array"},
      {kInit, [](json& r) { r["weights"].erase(0); }, "weights",
       "has 3 digests, the header names 4 parameters"},
      {kFirstStep, [](json& r) { r["grads"][1] = "xyz"; }, "grads[1]", "32 hex digits"},
      {kFirstStep, [](json& r) { r["grads"][1] = std::string(32, 'g'); }, "grads[1]",
       "32 hex digits"},
      {kFirstStep, [](json& r) { r["indices"] = 123; }, "indices", "expected a string"},
      {kFirstStep, [](json& r) { r["weights"].push_back(r["weights"][0]); }, "weights",
       "has 5 digests"},
      {kFirstStep, [](json& r) { r["loss_bits"] = "0x3f80"; }, "loss_bits", "0x and 8 hex"},
      {kFirstStep, [](json& r) { r["step"] = "0"; }, "step", "expected an integer"},
      {kFirstStep, [](json& r) { r["step"] = -1; }, "step", "found the integer -1"},
      {kFirstStep, [](json& r) { r["seconds"] = -1.0; }, "seconds", ">= 0"},
      {kFirstStep, [](json& r) { r.erase("seconds"); }, "seconds", "is missing"},
      {kFirstStep, [](json& r) { r["optimizer_state"] = json::object(); }, "optimizer_state",
       "expected a string"},
      {kEpoch0, [](json& r) { r["eval_loss"] = "low"; }, "eval_loss", "a number or null"},
      {kEpoch0, [](json& r) { r["seconds"] = json::array(); }, "seconds", "expected a number"},
      {kEnd, [](json& r) { r["weights"] = json::object(); }, "weights", "expected an array"},
      {kEnd, [](json& r) { r.erase("total_seconds"); }, "total_seconds", "is missing"},
      {kEnd, [](json& r) { r["record"] = "finish"; }, "record", "unknown record 'finish'"},
  };
  for (const Case& c : cases) {
    INFO("line " << c.line << ", field " << c.field);
    require_rejected(edited(c.line, c.edit), c.line, c.field, c.problem);
  }
}

TEST_CASE("echoed values of a damaged trace are truncated", "[trace]") {
  const std::string huge(100000, 'a');
  try {
    ra::trace::parse_trace(edited(kHeader,
                                  [&](json& h) {
                                    h["backend"] = {{"x", huge}};
                                  }),
                           "t.jsonl");
    FAIL("accepted");
  } catch (const ra::InputError& e) {
    REQUIRE(std::string(e.what()).size() < 200);
  }
  try {
    ra::trace::parse_trace(edited(kFirstStep, [&](json& r) { r["inputs"] = huge; }), "t.jsonl");
    FAIL("accepted");
  } catch (const ra::InputError& e) {
    REQUIRE(std::string(e.what()).find("field 'inputs'") != std::string::npos);
    REQUIRE(std::string(e.what()).size() < 200);
  }
}

TEST_CASE("a trace without its end record stays a truncated trace", "[trace]") {
  const std::string text = without_line(read_text(run_file(0)), kEnd);
  try {
    ra::trace::parse_trace(text, "cut.trace.jsonl");
    FAIL("accepted");
  } catch (const ra::InputError& e) {
    REQUIRE(std::string(e.what()).find("cut.trace.jsonl: trace is truncated") == 0);
  }
}

TEST_CASE("a run whose losses are not finite writes a trace that reads back", "[trace]") {
  // nlohmann/json writes NaN as null: the reader takes null for a mean loss that is not finite.
  ra::trace::Trace t = ra::trace::read_trace(run_file(0));
  const std::uint32_t nan_bits =
      std::bit_cast<std::uint32_t>(std::numeric_limits<float>::quiet_NaN());
  for (auto& s : t.steps) s.loss_bits = nan_bits;
  for (auto& e : t.epochs) e.mean_train_loss = std::numeric_limits<double>::quiet_NaN();
  t.final->final_loss_bits = nan_bits;
  const std::string text = ra::trace::serialize_trace(t);
  REQUIRE(text.find("\"train_loss\":null") != std::string::npos);
  const auto back = ra::trace::parse_trace(text, "nan.trace.jsonl");
  REQUIRE(back.final->final_loss_bits == nan_bits);
  REQUIRE(std::isnan(back.epochs[0].mean_train_loss));
}

TEST_CASE("ledger entries: the autotune measurement is optional and checked", "[trace]") {
  const json pinned = {{"layer", "conv 2x1x8x8 k3 3x3 s1 p0"},
                       {"direction", "forward"},
                       {"algorithm", "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM"},
                       {"deterministic", true},
                       {"math_type", "CUDNN_FMA_MATH"},
                       {"workspace_bytes", 0},
                       {"chosen_by", "pinned"}};
  json autotuned = pinned;
  autotuned["chosen_by"] = "autotuned";
  autotuned["autotune"] = {
      {"math_type", "CUDNN_FMA_MATH"}, {"time_ms", 0.25}, {"workspace_bytes", 4096}};
  // Older traces have no "autotune" key; newer autotuned entries have it: both are read.
  const std::string text = edited(kHeader, [&](json& h) { h["ledger"] = {pinned, autotuned}; });
  const auto t = ra::trace::parse_trace(text, "ledger.trace.jsonl");
  REQUIRE(t.header.ledger.size() == 2);
  CHECK_FALSE(t.header.ledger[0].contains("autotune"));
  CHECK(t.header.ledger[1]["autotune"]["time_ms"] == 0.25);

  autotuned["autotune"]["time_ms"] = "fast";
  require_rejected(edited(kHeader,
                          [&](json& h) {
                            h["ledger"] = {pinned, autotuned};
                          }),
                   kHeader, "ledger[1].autotune.time_ms", "expected a number");
  autotuned["autotune"] = {{"math_type", "CUDNN_FMA_MATH"}, {"time_ms", 0.25}};
  require_rejected(edited(kHeader, [&](json& h) { h["ledger"] = json::array({autotuned}); }),
                   kHeader, "ledger[0].autotune.workspace_bytes", "is missing");
}
