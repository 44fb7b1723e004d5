// Aligning two programs' op streams (compare/sequence_alignment.h, compare/op_alignment.h) on
// streams built in memory: the alignment is a longest common subsequence, checked against an
// independent reference (the textbook O(NM) table of LCS lengths) on thousands of small random
// streams; the edge cases (empty, one side empty, identical, a fused op replacing three, an extra
// op shifting the occurrences of its name); and where two programs part, each kind.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "compare/op_alignment.h"
#include "compare/sequence_alignment.h"

namespace {

using ra::Digest128;
using ra::compare::longest_common_subsequence;
using ra::compare::MatchedRun;
using ra::compare::OpParting;
using ra::compare::OpStretch;
using ra::trace::OpRecord;

using Keys = std::vector<std::uint32_t>;

// The reference: the length of a longest common subsequence by the O(NM) table.
std::size_t lcs_length_by_table(const Keys& a, const Keys& b) {
  std::vector<std::vector<std::size_t>> t(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

// The runs' total length, after checking that they are a common subsequence: in order, within
// both sequences, of equal keys, and never touching on both sides (merged as they should be).
std::size_t checked_length(const std::vector<MatchedRun>& runs, const Keys& a, const Keys& b) {
  std::size_t length = 0, next_a = 0, next_b = 0;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const MatchedRun& run = runs[r];
    REQUIRE(run.length > 0);
    REQUIRE(run.a_begin >= next_a);
    REQUIRE(run.b_begin >= next_b);
    REQUIRE(run.a_begin + run.length <= a.size());
    REQUIRE(run.b_begin + run.length <= b.size());
    if (r > 0) REQUIRE((run.a_begin > next_a || run.b_begin > next_b));
    for (std::size_t i = 0; i < run.length; ++i) REQUIRE(a[run.a_begin + i] == b[run.b_begin + i]);
    next_a = run.a_begin + run.length;
    next_b = run.b_begin + run.length;
    length += run.length;
  }
  return length;
}

Keys random_keys(std::mt19937& rng, std::size_t max_length, std::uint32_t alphabet) {
  std::uniform_int_distribution<std::size_t> length(0, max_length);
  std::uniform_int_distribution<std::uint32_t> key(0, alphabet - 1);
  Keys out(length(rng));
  for (auto& k : out) k = key(rng);
  return out;
}

Digest128 dg(std::uint64_t n) {
  return Digest128{n, 0x0a11};
}

OpRecord rec(const std::string& layer, const std::string& op, std::vector<Digest128> in,
             std::vector<Digest128> out) {
  OpRecord r{op, layer, "", "", std::move(in), std::move(out)};
  r.in_types.assign(r.in.size(), "f32[4]");
  r.out_types.assign(r.out.size(), "f32[4]");
  return r;
}

// A model's forward as program A runs it: a linear layer, a LayerNorm written out in three ops
// (mean, sub, div), a head reading the norm's output.
std::vector<OpRecord> manual_norm() {
  return {rec("model.fc", "aten.addmm", {dg(1), dg(2)}, {dg(3)}),
          rec("model.norm", "aten.mean", {dg(3)}, {dg(4)}),
          rec("model.norm", "aten.sub", {dg(3), dg(4)}, {dg(5)}),
          rec("model.norm", "aten.div", {dg(5)}, {dg(6)}),
          rec("model.head", "aten.addmm", {dg(6), dg(7)}, {dg(8)})};
}

// Program B: the norm one fused op. `norm_out` is its output (dg(6): A's, to the bit).
std::vector<OpRecord> fused_norm(std::uint64_t norm_out) {
  return {rec("model.fc", "aten.addmm", {dg(1), dg(2)}, {dg(3)}),
          rec("model.norm", "aten.native_layer_norm", {dg(3)}, {dg(norm_out)}),
          rec("model.head", "aten.addmm", {dg(norm_out), dg(7)}, {dg(norm_out == 6 ? 8 : 80)})};
}

ra::trace::StepRecord step_of(std::vector<OpRecord> ops) {
  ra::trace::StepRecord s;
  s.ops_recorded = true;
  s.ops = std::move(ops);
  return s;
}

}  // namespace

TEST_CASE("the alignment is a longest common subsequence of random streams", "[compare][align]") {
  // Half of the pairs draw B's keys from an alphabet that only overlaps A's: keys in one stream
  // alone are dropped before the alignment, and the runs must map back around them.
  std::mt19937 rng(63);
  for (std::uint32_t alphabet : {1u, 2u, 3u, 5u, 12u}) {
    for (int i = 0; i < 600; ++i) {
      const Keys a = random_keys(rng, 24, alphabet);
      Keys b = random_keys(rng, 24, alphabet + alphabet / 2 + 1);
      if (i % 2) {
        for (auto& k : b) k += alphabet / 2 + 1;
      }
      CAPTURE(alphabet, a, b);
      REQUIRE(checked_length(longest_common_subsequence(a, b), a, b) == lcs_length_by_table(a, b));
    }
  }
}

TEST_CASE("a stream with edits aligns with its original", "[compare][align]") {
  // Long streams made from one another by a few insertions and deletions, as two programs that
  // differ in a few places: the table's length again, and at least the untouched keys aligned.
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    Keys a = random_keys(rng, 400, 40), b = a;
    std::uniform_int_distribution<std::uint32_t> key(0, 60);
    for (int e = 0; e < 10 && !b.empty(); ++e) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, b.size() - 1)(rng);
      if (e % 2)
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
      else
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), key(rng));
    }
    const std::size_t length = checked_length(longest_common_subsequence(a, b), a, b);
    CHECK(length == lcs_length_by_table(a, b));
    CHECK(length + 5 >= a.size());
  }
}

TEST_CASE("edge cases of the alignment", "[compare][align]") {
  const Keys none, some = {1, 2, 3, 2, 1};
  CHECK(longest_common_subsequence(none, none).empty());
  CHECK(longest_common_subsequence(some, none).empty());
  CHECK(longest_common_subsequence(none, some).empty());
  CHECK(longest_common_subsequence(some, some) == std::vector<MatchedRun>{{0, 0, 5}});
  CHECK(longest_common_subsequence(Keys{1, 2}, Keys{3, 4}).empty());

  const std::vector<OpRecord> a = manual_norm();
  SECTION("both streams empty: nothing to align") {
    CHECK(ra::compare::align_op_records({}, {}).empty());
  }
  SECTION("one side empty: one unaligned stretch") {
    CHECK(ra::compare::align_op_records(a, {}) == std::vector<OpStretch>{{0, 5, 0, 0, false}});
  }
  SECTION("identical streams: one aligned stretch") {
    CHECK(ra::compare::align_op_records(a, a) == std::vector<OpStretch>{{0, 5, 0, 5, true}});
  }
  SECTION("a fused op replacing three: the three against the one, the rest aligned") {
    CHECK(ra::compare::align_op_records(a, fused_norm(6)) ==
          std::vector<OpStretch>{{0, 1, 0, 1, true}, {1, 4, 1, 2, false}, {4, 5, 2, 3, true}});
  }
}

TEST_CASE("an extra op does not shift the pairing of the later ops of its name",
          "[compare][align]") {
  // B copies (aten.add) before the ops A and B share: keyed by occurrence ("the 1st aten.add in
  // model.block"), B's extra add would pair with A's first add and every later add with the wrong
  // one; by (layer, op) the extra add is the one left unaligned.
  const auto op = [](const char* name) { return rec("model.block", name, {}, {}); };
  const std::vector<OpRecord> a = {op("aten.mul"), op("aten.add"), op("aten.mul"), op("aten.add")};
  const std::vector<OpRecord> b = {op("aten.add"), op("aten.mul"), op("aten.add"), op("aten.mul"),
                                   op("aten.add")};
  CHECK(ra::compare::align_op_records(a, b) ==
        std::vector<OpStretch>{{0, 0, 0, 1, false}, {0, 4, 1, 5, true}});
}

TEST_CASE("where two programs part", "[compare][align]") {
  SECTION("a fused op that computes the same bits: they do not part") {
    const auto s = ra::compare::align_step(step_of(manual_norm()), step_of(fused_norm(6)));
    CHECK_FALSE(s.parting);
    CHECK(s.aligned == 2);
    CHECK(s.unaligned() == 1);
  }
  SECTION("a fused op that computes other bits: the stretch, found by what the head reads") {
    const auto s = ra::compare::align_step(step_of(manual_norm()), step_of(fused_norm(60)));
    REQUIRE(s.parting);
    CHECK(s.parting->kind == OpParting::Kind::stretch);
    CHECK(s.parting->a == 4);
    CHECK(s.parting->b == 2);
    CHECK(s.parting->positions == std::vector<std::size_t>{0});
    CHECK(s.parting->stretch == std::size_t{1});
  }
  SECTION("an aligned op with equal inputs and another output: that op") {
    std::vector<OpRecord> b = manual_norm();
    b[2].out[0] = dg(50);
    b[3].in[0] = dg(50);
    const auto s = ra::compare::align_step(step_of(manual_norm()), step_of(b));
    REQUIRE(s.parting);
    CHECK(s.parting->kind == OpParting::Kind::op);
    CHECK(s.parting->a == 2);
    CHECK(ra::compare::occurrence_of(b, 2) == 0);
  }
  SECTION("an input no op made differs (the batch): before the ops") {
    std::vector<OpRecord> b = fused_norm(6);
    b[0].in[0] = dg(100);
    const auto s = ra::compare::align_step(step_of(manual_norm()), step_of(b));
    REQUIRE(s.parting);
    CHECK(s.parting->kind == OpParting::Kind::inputs);
    CHECK(s.parting->a == 0);
    CHECK_FALSE(s.parting->stretch);
  }
  SECTION("an aligned op read between the stretch and its reader does not hide the stretch") {
    std::vector<OpRecord> a = manual_norm(), b = fused_norm(60);
    const OpRecord transpose = rec("model.head", "aten.t", {dg(7)}, {dg(9)});
    a.insert(a.begin() + 4, transpose);
    b.insert(b.begin() + 2, transpose);
    const auto s = ra::compare::align_step(step_of(a), step_of(b));
    REQUIRE(s.parting);
    CHECK(s.parting->kind == OpParting::Kind::stretch);
    CHECK(s.parting->a == 5);
  }
}

TEST_CASE("the layers of a stretch and an op's occurrence", "[compare][align]") {
  const std::vector<OpRecord> a = manual_norm();
  CHECK(ra::compare::layers_of(a, 0, 5) == "model.fc, model.norm, model.head");
  CHECK(ra::compare::layers_of(a, 1, 4) == "model.norm");
  std::vector<OpRecord> many;
  for (int i = 0; i < 7; ++i)
    many.push_back(rec("model.layers." + std::to_string(i), "aten.t", {}, {}));
  CHECK(ra::compare::layers_of(many, 0, 7) ==
        "model.layers.0, model.layers.1, model.layers.2, model.layers.3 and 3 more");
  CHECK(ra::compare::occurrence_of(a, 4) == 0);  // model.head's first aten.addmm, not the 2nd
}
