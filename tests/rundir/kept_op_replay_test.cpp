// The replay of a PyTorch run's kept op (rundir/kept_op_replay.h; lib/python/repro_audit/replay.py
// writes replay.json): read only when it is the replay of the root cause's own op, a regular file
// of sane size and fields; anything else is named, never used, never fatal.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "compare/compare.h"
#include "rundir/kept_op_replay.h"
#include "support/temp_dir.h"

using Catch::Matchers::Contains;

namespace {

ra::compare::RootCause sum_cause() {
  ra::compare::RootCause c;
  c.kind = ra::compare::RootCause::Kind::op;
  c.step = 2;
  c.index = 11;
  c.record.op = "aten.sum.default";
  return c;
}

std::filesystem::path write(const std::filesystem::path& dir, const std::string& text) {
  const auto path = dir / "replay.json";
  std::ofstream(path) << text;
  return path;
}

const char* kReplay =
    R"({"op": "aten.sum.default", "step": 2, "index": 11, "times": 10, "distinct_outputs": 3,
        "matches_run": true, "outputs": [], "switches": {}})";

}  // namespace

TEST_CASE("a kept op's replay is read when it is the root cause's op", "[rundir][pytorch]") {
  ra::test::TempDir dir;
  std::string why;
  const auto r = ra::rundir::read_kept_replay(write(dir.path, kReplay), sum_cause(), why);
  REQUIRE(r);
  CHECK(why.empty());
  CHECK(r->times == 10);
  CHECK(r->distinct_outputs == 3);
  CHECK(r->matches_run);
}

TEST_CASE("no replay file is no replay and no complaint", "[rundir][pytorch]") {
  ra::test::TempDir dir;
  std::string why;
  CHECK_FALSE(ra::rundir::read_kept_replay(dir.path / "replay.json", sum_cause(), why));
  CHECK(why.empty());
}

TEST_CASE("another op's, a damaged or a linked replay is named and not used", "[rundir][pytorch]") {
  ra::test::TempDir dir;
  std::string why;
  std::string other = kReplay;
  other.replace(other.find("\"index\": 11"), 11, "\"index\": 12");
  CHECK_FALSE(ra::rundir::read_kept_replay(write(dir.path, other), sum_cause(), why));
  CHECK_THAT(why, Contains("the replay of another op (step 2, op 12)"));

  for (const std::string bad :
       {std::string("{"), std::string("[]"), std::string(R"({"op": "aten.sum.default"})"),
        std::string(kReplay).replace(std::string(kReplay).find("\"times\": 10"), 11,
                                     "\"times\": 0 "),
        std::string(kReplay).replace(std::string(kReplay).find("\"distinct_outputs\": 3"), 21,
                                     "\"distinct_outputs\": 11")}) {
    why.clear();
    CHECK_FALSE(ra::rundir::read_kept_replay(write(dir.path, bad), sum_cause(), why));
    CHECK_THAT(why, Contains("replay.json"));
  }

  const auto real = write(dir.path, kReplay);
  const auto link = dir.path / "linked" / "replay.json";
  std::filesystem::create_directories(link.parent_path());
  std::filesystem::create_symlink(real, link);
  why.clear();
  CHECK_FALSE(ra::rundir::read_kept_replay(link, sum_cause(), why));
  CHECK_THAT(why, Contains("symbolic link"));

  const auto big = dir.path / "big" / "replay.json";
  std::filesystem::create_directories(big.parent_path());
  std::ofstream(big) << std::string(2 << 20, ' ');
  why.clear();
  CHECK_FALSE(ra::rundir::read_kept_replay(big, sum_cause(), why));
  CHECK_THAT(why, Contains("the limit for a replay"));
}
