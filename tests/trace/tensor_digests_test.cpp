// Levels of detail (trace/tensor_digests.h, docs/trace-format.md "Levels of detail"): the
// --tensor-digests plans, the category digest (checked against the PyTorch recorder's
// digest_of_digests), and version 4 traces written and read back, with every rule the reader
// holds them to.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "trace/tensor_digests.h"
#include "trace/test_header.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

using namespace ra::trace;

ra::Digest128 plan_digest(std::uint64_t n) {
  return ra::Digest128{n, 0xde7a11u};
}

// A version 4 trace of `steps` steps (2 per epoch) and two parameters, recorded per tensor at
// the steps of `plan` and per category at the others.
Trace detailed_trace(int steps, const TensorDigestPlan& plan) {
  Trace t;
  t.header = ra::test::test_header("detail", kTraceFormatVersionWithDetail);
  TraceHeader& h = t.header;
  h.tensor_digests = plan;
  h.params = {{"w", {2, 3}, "f32"}, {"b", {3}, "f32"}};
  h.optimizer_state = {"w.momentum", "b.momentum"};
  t.initial_weights = {plan_digest(1), plan_digest(2)};
  double sum = 0;
  for (int s = 0; s < steps; ++s) {
    StepRecord r;
    r.step = s;
    r.epoch = s / 2;
    r.batch = s % 2;
    r.loss_bits = 0x3f800000u + static_cast<std::uint32_t>(s);
    r.seconds = 0.5;
    const std::vector<ra::Digest128> grads{plan_digest(100 + s), plan_digest(200 + s)};
    const std::vector<ra::Digest128> weights{plan_digest(300 + s), plan_digest(400 + s)};
    if (plan.at(s)) {
      r.grads = grads;
      r.weights = weights;
    } else {
      r.per_tensor = false;
      r.grads_digest = category_digest(grads);
      r.weights_digest = category_digest(weights);
      r.buffers_digest = category_digest({});
    }
    sum += std::bit_cast<float>(r.loss_bits);
    t.steps.push_back(r);
    if (s % 2 == 1 || s + 1 == steps) {
      const int n = s % 2 + 1;
      t.epochs.push_back({s / 2, n, sum / n, std::nullopt, std::nullopt, 1.0});
      sum = 0;
    }
  }
  FinalRecord f;
  f.steps = steps;
  f.final_loss_bits = t.steps.back().loss_bits;
  f.median_step_seconds = 0.5;
  f.weights = {plan_digest(300 + steps - 1), plan_digest(400 + steps - 1)};
  t.final = f;
  return t;
}

std::vector<std::string> lines_in(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// The trace's text with record `index` (0: the header) edited by `edit`.
std::string with_record_edited(const Trace& t, std::size_t index,
                               const std::function<void(json&)>& edit) {
  std::vector<std::string> lines = lines_in(serialize_trace(t));
  json record = json::parse(lines.at(index));
  edit(record);
  lines[index] = record.dump();
  return joined(lines);
}

}  // namespace

TEST_CASE("tensor digest plans: every:K, windows, all and none, as the options write them",
          "[trace][detail]") {
  const TensorDigestPlan plan = parse_tensor_digest_plan({"every:1000", "5000:5100", "7"});
  CHECK(plan.every == 1000);
  REQUIRE(plan.windows.size() == 2);
  CHECK(plan.at(0));
  CHECK(plan.at(2000));
  CHECK_FALSE(plan.at(1));
  CHECK(plan.at(5000));
  CHECK(plan.at(5099));
  CHECK_FALSE(plan.at(5100));
  CHECK(plan.at(7));
  CHECK_FALSE(plan.at(8));
  CHECK(to_string(plan) == "every:1000,5000:5100,7:8");
  CHECK(
      to_json(plan) ==
      json::parse(R"({"every":1000,"windows":[{"first":5000,"last":5100},{"first":7,"last":8}]})"));

  CHECK(parse_tensor_digest_plan({}).all());  // no --tensor-digests: the default, every step
  CHECK(parse_tensor_digest_plan({"all"}).all());
  CHECK(parse_tensor_digest_plan({"every:1"}).all());
  CHECK(parse_tensor_digest_plan({"0:"}).all());
  const TensorDigestPlan none = parse_tensor_digest_plan({"none"});
  CHECK_FALSE(none.all());
  CHECK_FALSE(none.at(0));
  CHECK(to_string(none) == "none");
  CHECK(to_string(parse_tensor_digest_plan({"10:"})) == "10:");

  CHECK_THROWS_WITH(parse_tensor_digest_plan({"every:0"}), Contains("K must be at least 1"));
  CHECK_THROWS_WITH(parse_tensor_digest_plan({"every:2", "every:3"}), Contains("name one period"));
  CHECK_THROWS_WITH(parse_tensor_digest_plan({"none", "5"}), Contains("none excludes"));
  CHECK_THROWS_WITH(parse_tensor_digest_plan({"5:5"}), Contains("holds no step"));
  CHECK_THROWS_WITH(parse_tensor_digest_plan({"often"}),
                    Contains("--tensor-digests: 'often' is not a step window"));
  CHECK_THROWS_WITH(parse_tensor_digest_plan({"every:-1"}), Contains("is not a level"));
}

TEST_CASE("the category digest is the PyTorch recorder's digest_of_digests", "[trace][detail]") {
  // Computed by lib/python/repro_audit/digest.py digest_of_digests, an independent implementation.
  const auto a = ra::Digest128::from_hex("0123456789abcdef0123456789abcdef");
  const auto b = ra::Digest128::from_hex("fedcba9876543210fedcba9876543210");
  CHECK(category_digest({a, b}).hex() == "98e64713206e084cab10b6cdf8a17900");
  CHECK(category_digest({}).hex() == "e44eb5cb66898881a22255524e86cb1d");
  CHECK(category_digest({b, a}) != category_digest({a, b}));  // the order is part of it
}

TEST_CASE("a version 4 trace reads back as written, per tensor where the plan says",
          "[trace][detail]") {
  for (const TensorDigestPlan& plan :
       {TensorDigestPlan{3, {}}, TensorDigestPlan{std::nullopt, {{4, 6}}},
        TensorDigestPlan{std::nullopt, {}}, TensorDigestPlan{2, {{5, std::nullopt}}}}) {
    const Trace t = detailed_trace(7, plan);
    const std::string text = serialize_trace(t);
    const Trace back = parse_trace(text, "detail.trace.jsonl");
    REQUIRE(back.header.tensor_digests == plan);
    REQUIRE(back.steps.size() == t.steps.size());
    for (std::size_t s = 0; s < t.steps.size(); ++s) {
      CHECK(back.steps[s].per_tensor == plan.at(static_cast<std::int64_t>(s)));
      CHECK(back.steps[s].grads == t.steps[s].grads);
      CHECK(back.steps[s].weights_digest == t.steps[s].weights_digest);
    }
    CHECK(serialize_trace(back) == text);  // the round trip is exact
  }
  const std::string coarse = lines_in(serialize_trace(detailed_trace(3, {3, {}})))[3];
  CHECK_THAT(coarse, Contains("\"grads_digest\""));
  CHECK_THAT(coarse, !Contains("\"grads\""));
}

TEST_CASE("the reader holds a version 4 trace to its plan", "[trace][detail]") {
  const Trace t = detailed_trace(6, {3, {}});  // per tensor at steps 0 and 3
  const auto refused = [](const std::string& text) {
    return [text] { (void)parse_trace(text, "d.trace.jsonl"); };
  };
  SECTION("a per-category step that holds per-tensor digests") {
    const std::string text = with_record_edited(t, 3, [](json& r) { r["grads"] = json::array(); });
    CHECK_THROWS_WITH(refused(text)(), Contains("step 1 records one digest per category"));
  }
  SECTION("a per-tensor step that holds a category digest") {
    const std::string text =
        with_record_edited(t, 2, [](json& r) { r["weights_digest"] = std::string(32, 'a'); });
    CHECK_THROWS_WITH(refused(text)(), Contains("step 0 records a digest per tensor"));
  }
  SECTION("a per-category step without its digest") {
    const std::string text = with_record_edited(t, 3, [](json& r) { r.erase("weights_digest"); });
    CHECK_THROWS_WITH(refused(text)(), Contains("weights_digest"));
  }
  SECTION("the end's weights are not the last per-category step's") {
    const std::string text = with_record_edited(t, 11, [](json& r) {  // the end record
      r["weights"][0] = ra::Digest128{9, 9}.hex();
    });
    CHECK_THROWS_WITH(refused(text)(), Contains("combined, are not the weights_digest of step 5"));
  }
  SECTION("version 4 without a plan, or with every step") {
    CHECK_THROWS_WITH(
        refused(with_record_edited(t, 0, [](json& h) { h.erase("tensor_digests"); }))(),
        Contains("tensor_digests"));
    CHECK_THROWS_WITH(
        refused(with_record_edited(t, 0, [](json& h) { h["tensor_digests"]["every"] = 1; }))(),
        Contains("written as version 3"));
  }
  SECTION("a plan in a version 3 header") {
    const std::string text = with_record_edited(t, 0, [](json& h) { h["format_version"] = 3; });
    CHECK_THROWS_WITH(refused(text)(), Contains("a level of detail needs trace format version 4"));
  }
  SECTION("a version this tool does not know") {
    const std::string text = with_record_edited(t, 0, [](json& h) { h["format_version"] = 5; });
    CHECK_THROWS_WITH(refused(text)(), Contains("this tool reads versions 1, 2, 3 and 4"));
  }
}
