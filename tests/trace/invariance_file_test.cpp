// An invariance sweep's file (trace/invariance.h, docs/trace-format.md "Invariance sweeps"):
// written and read back field for field over its edge cases, and refused whole where it is
// damaged, unfinished or inconsistent; the plan's sizes and anchor rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "support/temp_dir.h"
#include "trace/invariance.h"

using Catch::Matchers::Contains;
using namespace ra::trace;

namespace {

ra::Digest128 d(std::uint64_t n) {
  return ra::Digest128{n, 0x1a2bu};
}

InvarianceProbe probe(int size, int row, const std::string& position, std::uint64_t seed) {
  InvarianceProbe p;
  p.config = {size, row, position, size == 1 ? "" : "batch", false};
  p.output_digest = d(seed);
  p.output_values = {1.5f, -0.0f, std::numeric_limits<float>::denorm_min(),
                     std::numeric_limits<float>::infinity(), std::nextafter(1.0f, 2.0f)};
  InvarianceOp linear{"aten.addmm.default", "fc1", {{d(seed + 1), false}, {d(7), true}}, {}};
  linear.output = RowDigest{d(seed + 2), false};
  InvarianceOp loss{"aten.mean.default", "", {{d(seed + 2), false}}, std::nullopt};
  p.ops = {linear, loss};
  return p;
}

InvarianceSweep sample_sweep() {
  InvarianceSweep s;
  s.source = "pytorch";
  s.model = "Net";
  s.device = "cpu";
  s.dtype = "torch.float32";
  s.batch_dim = 1;
  s.sample_shape = {3, 32, 32};
  s.output_shape = {10};
  s.reference = probe(1, 0, "first", 100);
  s.probes = {probe(2, 1, "last", 200), probe(5, 2, "middle", 300)};
  s.probes.back().config.control = true;
  s.probes.back().output_values.clear();  // a producer that kept no values
  s.control = InvarianceControl{0, "aten.addmm.default", "fc1"};
  return s;
}

void check_probe_equal(const InvarianceProbe& a, const InvarianceProbe& b) {
  CHECK(a.config.batch_size == b.config.batch_size);
  CHECK(a.config.anchor_row == b.config.anchor_row);
  CHECK(a.config.position == b.config.position);
  CHECK(a.config.neighbours == b.config.neighbours);
  CHECK(a.config.control == b.config.control);
  CHECK(a.output_digest == b.output_digest);
  REQUIRE(a.output_values.size() == b.output_values.size());
  for (std::size_t i = 0; i < a.output_values.size(); ++i) {
    CHECK(std::bit_cast<std::uint32_t>(a.output_values[i]) ==
          std::bit_cast<std::uint32_t>(b.output_values[i]));
  }
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].op == b.ops[i].op);
    CHECK(a.ops[i].module == b.ops[i].module);
    REQUIRE(a.ops[i].inputs.size() == b.ops[i].inputs.size());
    for (std::size_t k = 0; k < a.ops[i].inputs.size(); ++k) {
      CHECK(a.ops[i].inputs[k].digest == b.ops[i].inputs[k].digest);
      CHECK(a.ops[i].inputs[k].whole == b.ops[i].inputs[k].whole);
    }
    REQUIRE(a.ops[i].output.has_value() == b.ops[i].output.has_value());
    if (a.ops[i].output) CHECK(a.ops[i].output->digest == b.ops[i].output->digest);
  }
}

std::string written_text(const InvarianceSweep& s, const ra::test::TempDir& dir) {
  write_invariance_sweep(dir.path / "invariance.jsonl", s);
  return ra::read_file(dir.path / "invariance.jsonl");
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("an invariance sweep reads back what was written", "[trace][invariance]") {
  ra::test::TempDir dir;
  const InvarianceSweep s = sample_sweep();
  write_invariance_sweep(dir.path / "invariance.jsonl", s);
  const InvarianceSweep r = read_invariance_sweep(dir.path / "invariance.jsonl");
  CHECK(r.source == "pytorch");
  CHECK(r.model == "Net");
  CHECK(r.dtype == "torch.float32");
  CHECK(r.batch_dim == 1);
  CHECK(r.sample_shape == std::vector<std::int64_t>{3, 32, 32});
  CHECK(r.output_shape == std::vector<std::int64_t>{10});
  REQUIRE(r.control);
  CHECK(r.control->op == "aten.addmm.default");
  CHECK(r.control->module == "fc1");
  check_probe_equal(r.reference, s.reference);
  REQUIRE(r.probes.size() == 2);
  check_probe_equal(r.probes[0], s.probes[0]);
  check_probe_equal(r.probes[1], s.probes[1]);

  SECTION("a sweep without a control and without probes") {
    InvarianceSweep bare = sample_sweep();
    bare.control.reset();
    bare.probes.clear();
    bare.reference.ops.clear();
    write_invariance_sweep(dir.path / "bare.jsonl", bare);
    const InvarianceSweep b = read_invariance_sweep(dir.path / "bare.jsonl");
    CHECK_FALSE(b.control);
    CHECK(b.probes.empty());
    CHECK(b.reference.ops.empty());
  }
}

TEST_CASE("a damaged or unfinished sweep is refused whole", "[trace][invariance]") {
  ra::test::TempDir dir;
  const std::string text = written_text(sample_sweep(), dir);
  const auto file = dir.path / "damaged.jsonl";
  const auto refused = [&](const std::string& t) {
    write_text(file, t);
    return read_invariance_sweep(file);
  };
  const std::size_t last_line = text.rfind('\n', text.size() - 2) + 1;

  SECTION("no end line: killed mid-sweep") {
    CHECK_THROWS_WITH(refused(text.substr(0, last_line)), Contains("did not finish"));
  }
  SECTION("an end that promises other probes") {
    CHECK_THROWS_WITH(refused(text.substr(0, last_line) + "{\"end\": {\"probes\": 3}}\n"),
                      Contains("promises 3") && Contains("holds 2"));
  }
  SECTION("a line after the end") {
    CHECK_THROWS_WITH(refused(text + "{}\n"), Contains("after the end"));
  }
  SECTION("another file's first line") {
    CHECK_THROWS_WITH(refused("{\"record\": \"header\"}\n"), Contains("not an invariance sweep"));
  }
  SECTION("an empty file") {
    CHECK_THROWS_WITH(refused(""), Contains("empty"));
  }
  SECTION("a truncated line") {
    CHECK_THROWS_AS(refused(text.substr(0, text.size() / 2)), ra::InputError);
  }
  SECTION("a control past the reference's ops") {
    InvarianceSweep s = sample_sweep();
    s.control->op_index = 2;
    write_invariance_sweep(file, s);
    CHECK_THROWS_WITH(read_invariance_sweep(file), Contains("control.op_index"));
  }
  SECTION("a reference that is not the anchor alone") {
    InvarianceSweep s = sample_sweep();
    s.reference.config.batch_size = 2;
    write_invariance_sweep(file, s);
    CHECK_THROWS_WITH(read_invariance_sweep(file), Contains("anchor alone"));
  }
  SECTION("an anchor row outside its batch") {
    InvarianceSweep s = sample_sweep();
    s.probes[0].config.anchor_row = 2;
    write_invariance_sweep(file, s);
    CHECK_THROWS_WITH(read_invariance_sweep(file), Contains("anchor_row"));
  }
  SECTION("values that are not float32s") {
    std::string t = text;
    const std::size_t at = t.find("\"values\":\"") + 10;
    t.replace(at, 4, "AAA=");  // the first 4 characters: 2 bytes, not a float
    t.erase(at + 4, t.find('"', at) - at - 4);
    CHECK_THROWS_WITH(refused(t), Contains("multiple of 4 bytes"));
  }
}

TEST_CASE("a sweep's default sizes and anchor rows", "[trace][invariance]") {
  CHECK(default_invariance_sizes(4) == std::vector<int>{1, 2, 3, 4});
  const std::vector<int> to_64 = default_invariance_sizes(64);
  CHECK(to_64.front() == 1);
  CHECK(to_64.back() == 64);
  for (int s : {16, 17, 31, 32, 33, 63, 64}) CHECK(std::count(to_64.begin(), to_64.end(), s) == 1);
  CHECK(std::count(to_64.begin(), to_64.end(), 20) == 0);
  CHECK(std::is_sorted(to_64.begin(), to_64.end()));
  CHECK(default_invariance_sizes(300).back() == 257);
  CHECK_THROWS_AS(default_invariance_sizes(0), ra::InputError);
  CHECK(anchor_row("first", 7) == 0);
  CHECK(anchor_row("middle", 7) == 3);
  CHECK(anchor_row("last", 7) == 6);
  CHECK(anchor_row("middle", 1) == 0);
  CHECK_THROWS_WITH(anchor_row("centre", 4), Contains("first, middle or last"));
  CHECK_THROWS_AS(anchor_row("first", 0), ra::InputError);
}

TEST_CASE("a sweep's --sizes list: sizes and ranges, and what is not one refused",
          "[trace][invariance]") {
  CHECK(parse_invariance_sizes("4") == std::vector<int>{1, 4});
  CHECK(parse_invariance_sizes("2-4,8,3") == std::vector<int>{1, 2, 3, 4, 8});
  CHECK(parse_invariance_sizes("1") == std::vector<int>{1});
  CHECK_THROWS_WITH(parse_invariance_sizes("0"), Contains("start at 1"));
  CHECK_THROWS_WITH(parse_invariance_sizes("8-2"), Contains("'8-2'"));
  CHECK_THROWS_WITH(parse_invariance_sizes("4,,5"), Contains("not a size"));
  CHECK_THROWS_WITH(parse_invariance_sizes("-3"), Contains("not a size"));
  CHECK_THROWS_WITH(parse_invariance_sizes("99999999"), Contains("not a size"));
  CHECK_THROWS_WITH(parse_invariance_sizes(""), Contains("not a size"));
}
