// Op records of PyTorch runs (lib/python/repro_audit/ops.py): their types through the trace file
// and the reader's check of them, the names a report gives their positions, what a differing
// input is said to come from, and the outputs the runs kept (audit/kept_outputs_file.h): used
// whole, only for their own run, never half.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "audit/kept_outputs_file.h"
#include "compare/compare.h"
#include "support/temp_dir.h"
#include "trace/in_memory_traces.h"
#include "trace/op_names.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;

namespace {

using ra::Digest128;
using ra::audit::OpRecord;
using ra::audit::RootCause;
using ra::audit::Trace;

Digest128 d(std::uint64_t what, std::int64_t step, std::size_t i) {
  return ra::test::made_up_digest(200 + what, step, i);
}

// Three aten records per step: a random op drawing from the generator, a sum of its output, a
// division by the sum with a Python scalar.
std::vector<OpRecord> aten_ops(std::int64_t step) {
  std::vector<OpRecord> ops(3);
  ops[0] = {"aten.bernoulli_.float",        "model.drop",   "", "",
            {d(1, step, 0), d(2, step, 0)}, {d(3, step, 0)}};
  ops[0].in_types = {"f32[8,32]", "generator"};
  ops[0].out_types = {"f32[8,32]"};
  ops[1] = {"aten.sum.default", "model.norm", "", "", {d(3, step, 0)}, {d(4, step, 0)}};
  ops[1].in_types = {"f32[8,32]"};
  ops[1].out_types = {"f32[]"};
  ops[2] = {"aten.div.Tensor", "model.norm", "", "", {d(3, step, 0), d(4, step, 0), d(5, step, 0)},
            {d(6, step, 0)}};
  ops[2].in_types = {"f32[8,32]", "f32[]", "args"};
  ops[2].out_types = {"f32[8,32]"};
  return ops;
}

std::vector<Trace> pytorch_runs(int runs) {
  ra::test::TraceBuilder b;
  std::vector<Trace> out;
  for (int r = 0; r < runs; ++r) {
    Trace t = b.build(r);
    t.header.backend = "pytorch-cpu";
    t.header.format_version = 2;
    t.header.trace_ops = ra::audit::OpWindow{};
    for (auto& s : t.steps) {
      s.ops_recorded = true;
      s.ops = aten_ops(s.step);
    }
    out.push_back(std::move(t));
  }
  return out;
}

using ra::test::changed;

// Record 1's output differs at `step` on identical inputs, and record 2, which reads it, with it.
void sum_output_differs(Trace& t, std::int64_t step) {
  auto& ops = t.steps[static_cast<std::size_t>(step)].ops;
  ops[1].out[0] = changed(ops[1].out[0]);
  ops[2].in[1] = ops[1].out[0];
  ops[2].out[0] = changed(ops[2].out[0]);
  ra::test::diverge(t, step, 0);
}

RootCause only_cause(std::vector<Trace>& traces) {
  ra::audit::ComparisonOptions o;
  o.expect_identical = false;
  const auto r = ra::audit::compare_traces(traces, o);
  REQUIRE(r.root_causes.size() == 1);
  return r.root_causes[0];
}

// What the reader checks of a whole trace, made true of one built in memory.
void make_readable(Trace& t) {
  t.header.spec_digest = ra::audit::spec_digest_of(t.header.spec).hex();
  for (auto& e : t.epochs) {
    double sum = 0;
    for (const auto& s : t.steps)
      if (s.epoch == e.epoch) sum += std::bit_cast<float>(s.loss_bits);
    e.mean_train_loss = sum / static_cast<double>(e.steps);
  }
}

}  // namespace

TEST_CASE("op record types survive the trace file and are checked", "[audit][ops][pytorch]") {
  auto traces = pytorch_runs(1);
  Trace& t = traces[0];
  make_readable(t);
  const std::string text = ra::audit::serialize_trace(traces[0]);
  const Trace back = ra::audit::parse_trace(text, "t.trace.jsonl");
  REQUIRE(back.steps[1].ops.size() == 3);
  CHECK(back.steps[1].ops[2].in_types == std::vector<std::string>{"f32[8,32]", "f32[]", "args"});
  CHECK(back.steps[1].ops[1].out_types == std::vector<std::string>{"f32[]"});
  CHECK(ra::audit::serialize_trace(back) == text);

  SECTION("one type per digest, or none") {
    std::string bad = text;
    const std::string types = R"("in_types":["f32[8,32]","f32[]","args"])";
    bad.replace(bad.find(types), types.size(), R"("in_types":["f32[8,32]","args"])");
    CHECK_THROWS_WITH(ra::audit::parse_trace(bad, "t.trace.jsonl"),
                      Contains("expected 3 types, one per digest, found 2"));
  }
  SECTION("a type is a non-empty string") {
    std::string bad = text;
    const std::string types = R"("out_types":["f32[]"])";
    bad.replace(bad.find(types), types.size(), R"("out_types":[""])");
    CHECK_THROWS(ra::audit::parse_trace(bad, "t.trace.jsonl"));
  }
}

TEST_CASE("a typed record's positions are named by their types", "[audit][ops][pytorch]") {
  const std::vector<OpRecord> ops = aten_ops(0);
  CHECK(ra::audit::op_input_name(ops[0], 0) == "input 0 (f32[8,32])");
  CHECK(ra::audit::op_input_name(ops[0], 1) == "the generator state");
  CHECK(ra::audit::op_input_name(ops[2], 2) == "the non-tensor arguments");
  CHECK(ra::audit::op_output_name(ops[1], 0) == "output 0 (f32[])");
  // An engine record has no types: its op names its positions.
  const OpRecord engine{"conv2d.backward_filter", "conv2d_0", "", "", {}, {}};
  CHECK(ra::audit::op_input_name(engine, 1) == "dy");
}

TEST_CASE("a PyTorch op's differing input is said to come from where its type says",
          "[audit][ops][pytorch]") {
  auto traces = pytorch_runs(2);
  auto& ops = traces[1].steps[1].ops;
  SECTION("the generator state: seeded differently") {
    ops[0].in[1] = changed(ops[0].in[1]);
    ops[0].out[0] = changed(ops[0].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.kind == RootCause::Kind::outside_ops);
    CHECK(c.differing_inputs == std::vector<std::size_t>{1});
    CHECK_THAT(c.detail, Contains("the random generator's state differs"));
  }
  SECTION("the non-tensor arguments: a Python value") {
    ops[2].in[2] = changed(ops[2].in[2]);
    ops[2].out[0] = changed(ops[2].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    CHECK_THAT(only_cause(traces).detail, Contains("a Python value passed to the op differs"));
  }
  SECTION("a tensor no recorded op made: blamed at the next op the dispatcher saw") {
    ops[1].in[0] = changed(ops[1].in[0]);
    ops[1].out[0] = changed(ops[1].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.record.op == "aten.sum.default");
    CHECK_THAT(c.detail, Contains("bypasses PyTorch's dispatcher"));
  }
  SECTION("an op's own output: the op is the cause") {
    sum_output_differs(traces[1], 1);
    const RootCause c = only_cause(traces);
    CHECK(c.kind == RootCause::Kind::op);
    CHECK(c.record.layer == "model.norm");
    CHECK(c.detail.empty());
    REQUIRE(c.chain.size() == 1);
    CHECK(c.chain[0].op == "aten.div.Tensor");
  }
  SECTION("the chain ends where the runs' ops part: past it no pair says anything") {
    ops[1].out[0] = changed(ops[1].out[0]);
    ops[2].op = "aten.mul.Tensor";  // a branch on the differing value
    ops[2].out[0] = changed(ops[2].out[0]);
    ra::test::diverge(traces[1], 1, 0);
    const RootCause c = only_cause(traces);
    CHECK(c.record.op == "aten.sum.default");
    CHECK(c.chain.empty());
  }
}

namespace {

// A kept-outputs file as the recorder writes it: a header line, then per entry a line and bytes.
void write_kept(const std::filesystem::path& file, const std::string& audit_id, int run,
                const std::string& tail_cut = "") {
  std::string text = R"({"audit_id": ")" + audit_id + R"(", "entries": 1, "format_version": 1, )" +
                     R"("record": "kept_outputs", "run_index": )" + std::to_string(run) + "}\n";
  text += R"({"index": 1, "outputs": [{"bytes": 8, "dtype": "f32"}], "step": 3})"
          "\n";
  const float values[2] = {1.5f, -2.0f};
  text.append(reinterpret_cast<const char*>(values), sizeof values);
  text.resize(text.size() - tail_cut.size());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("kept outputs are used whole and only for their own run", "[audit][ops][pytorch]") {
  ra::test::TempDir dir;
  const auto file = dir.path / ra::audit::kKeptOutputsFileName;
  ra::audit::TraceHeader header;
  header.audit_id = "0123456789abcdef0123456789abcdef";
  header.run_index = 2;
  ra::audit::KeptOutputs store(1 << 20);

  SECTION("absent: nothing to say") {
    CHECK(ra::audit::load_kept_outputs(file, header, store).empty());
    CHECK_FALSE(store.find(2, 3, 1));
  }
  SECTION("whole and the run's own: in the store, as the run's") {
    write_kept(file, header.audit_id, 2);
    CHECK(ra::audit::load_kept_outputs(file, header, store).empty());
    const auto kept = store.find(2, 3, 1);
    REQUIRE(kept);
    REQUIRE(kept->bytes.size() == 1);
    CHECK(kept->dtypes == std::vector<ra::DType>{ra::DType::f32});
    float values[2];
    std::memcpy(values, kept->bytes[0].data(), sizeof values);
    CHECK(values[0] == 1.5f);
    CHECK(values[1] == -2.0f);
  }
  SECTION("cut short: named as damaged, nothing of it used") {
    write_kept(file, header.audit_id, 2, "abc");
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store),
               Contains("damaged (it ends inside an output's bytes), not used"));
    CHECK_FALSE(store.find(2, 3, 1));
  }
  SECTION("another run's or another audit's: named, not used") {
    write_kept(file, header.audit_id, 1);
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("kept by another run"));
    write_kept(file, "ffffffffffffffffffffffffffffffff", 2);
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("kept by another run"));
    CHECK_FALSE(store.find(2, 3, 1));
  }
  SECTION("bytes that are not whole elements, or an unknown dtype: damaged") {
    std::ofstream(file, std::ios::binary)
        << R"({"audit_id": ")" + header.audit_id +
               R"(", "entries": 1, "format_version": 1, "record": "kept_outputs", "run_index": 2})"
        << "\n"
        << R"({"index": 0, "outputs": [{"bytes": 3, "dtype": "f32"}], "step": 0})"
        << "\nabc";
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("not whole elements"));
  }
  SECTION("a field of another type: damaged, never an exception of the JSON library") {
    for (const char* head : {R"({"record": 7})", R"({"record": "kept_outputs", "audit_id": 5})",
                             R"({"record": "kept_outputs", "format_version": "1"})"}) {
      std::ofstream(file, std::ios::binary) << head << "\n";
      CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("damaged"));
    }
    std::ofstream(file, std::ios::binary)
        << R"({"audit_id": ")" + header.audit_id +
               R"(", "entries": 1, "format_version": 1, "record": "kept_outputs", "run_index": 2})"
        << "\n"
        << R"({"index": 0, "outputs": [{"bytes": 4, "dtype": ["f32"]}], "step": 0})"
        << "\nabcd";
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("damaged"));
    CHECK_FALSE(store.find(2, 0, 0));
  }
  SECTION("a FIFO or a link under the name: not read, without waiting") {
    REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store), Contains("FIFO"));
    std::filesystem::remove(file);
    write_kept(dir.path / "elsewhere.bin", header.audit_id, 2);
    std::filesystem::create_symlink(dir.path / "elsewhere.bin", file);
    CHECK_THAT(ra::audit::load_kept_outputs(file, header, store),
               Contains("is a symbolic link, never followed"));
    CHECK_FALSE(store.find(2, 3, 1));
  }
}

TEST_CASE("cuDNN engines read from the log explain a PyTorch run's divergence",
          "[audit][ops][pytorch]") {
  // cudnn.benchmark chose engine 34 for the filter gradient in run 0 and engine 3 in run 1: the
  // convolution's output differs on identical inputs, and the records name the engines.
  auto traces = pytorch_runs(2);
  const std::string key = "conv 8x1x6x6 k4 3x3 s1 p0";
  for (int r = 0; r < 2; ++r) {
    const std::string algorithm = r == 0 ? "cudnn engine 34" : "cudnn engine 3";
    traces[r].header.ledger = nlohmann::json::array({{{"layer", key},
                                                      {"direction", "backward_filter"},
                                                      {"algorithm", algorithm},
                                                      {"engine", r == 0 ? 34 : 3},
                                                      {"deterministic", r == 0},
                                                      {"math_type", "fma"},
                                                      {"chosen_by", "cudnn.benchmark"}}});
    for (auto& s : traces[r].steps) {
      s.ops[1].op = "aten.convolution_backward.default";
      s.ops[1].ledger_key = key;
      s.ops[1].algorithm = "backward_filter: " + algorithm;
      s.ops[1].algorithm_deterministic = r == 0;
    }
  }
  sum_output_differs(traces[1], 1);
  const RootCause c = only_cause(traces);
  CHECK(c.kind == RootCause::Kind::op);
  CHECK(c.cause == RootCause::Class::algorithm_choice);
  REQUIRE(c.algorithms.size() == 2);
  CHECK(c.algorithms[0].algorithm == "backward_filter: cudnn engine 34");
  CHECK(c.algorithms[1].algorithm == "backward_filter: cudnn engine 3");

  SECTION("the ledger's entries, without a workspace, read back") {
    Trace& t = traces[0];
    make_readable(t);
    const Trace back = ra::audit::parse_trace(ra::audit::serialize_trace(t), "t.trace.jsonl");
    CHECK(back.header.ledger == t.header.ledger);
    std::string bad = ra::audit::serialize_trace(t);
    bad.replace(bad.find(R"("engine":34)"), 11, R"("engine":"x")");
    CHECK_THROWS_WITH(ra::audit::parse_trace(bad, "t.trace.jsonl"), Contains("engine"));
  }
}
