// --shard: K/N, and auto from the environment of a Slurm job array or a Kubernetes Indexed Job
// (the variables as Slurm 22.05 sets them: scripts/slurm-local shows them); which runs a shard
// trains; the names of shard locks.
#include "rundir/shard.h"

#include <catch2/catch.hpp>
#include <map>

#include "core/error.h"

using ra::rundir::parse_shard;
using ra::rundir::Shard;

namespace {

ra::rundir::EnvironmentLookup env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

const ra::rundir::EnvironmentLookup kEmpty = env({});

}  // namespace

TEST_CASE("the shard option: K/N is 0-based and checked whole", "[shard]") {
  CHECK(parse_shard("0/4", kEmpty) == Shard{0, 4});
  CHECK(parse_shard("3/4", kEmpty) == Shard{3, 4});
  CHECK(parse_shard("0/1", kEmpty) == Shard{0, 1});
  CHECK_THROWS_WITH(parse_shard("4/4", kEmpty), Catch::Contains("not below the count 4"));
  CHECK_THROWS_WITH(parse_shard("1/0", kEmpty), Catch::Contains("0 shards"));
  for (const char* bad : {"", "3", "a/4", "1/b", "-1/4", "1/4/2", "1.0/4", "1/ 4", "/4"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_shard(bad, kEmpty), ra::InputError);
  }
}

TEST_CASE("the shard option: auto reads a Slurm job array's task id and count", "[shard]") {
  // sbatch --array=0-3, task 2.
  const auto array = env({{"SLURM_ARRAY_TASK_ID", "2"},
                          {"SLURM_ARRAY_TASK_COUNT", "4"},
                          {"SLURM_ARRAY_TASK_MIN", "0"},
                          {"SLURM_ARRAY_TASK_MAX", "3"},
                          {"SLURM_ARRAY_TASK_STEP", "1"}});
  CHECK(parse_shard("auto", array) == Shard{2, 4});
  CHECK(parse_shard("auto/4", array) == Shard{2, 4});
  CHECK_THROWS_WITH(parse_shard("auto/5", array), Catch::Contains("has 4 tasks"));

  // --array=1-7:2 (ids 1 3 5 7), task 5: the third shard of four.
  CHECK(parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "5"},
                                 {"SLURM_ARRAY_TASK_COUNT", "4"},
                                 {"SLURM_ARRAY_TASK_MIN", "1"},
                                 {"SLURM_ARRAY_TASK_MAX", "7"},
                                 {"SLURM_ARRAY_TASK_STEP", "2"}})) == Shard{2, 4});
  // Without a count: from MIN and MAX.
  CHECK(parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "11"},
                                 {"SLURM_ARRAY_TASK_MIN", "10"},
                                 {"SLURM_ARRAY_TASK_MAX", "13"}})) == Shard{1, 4});
  // --array=1,3,7: not an evenly spaced range, so the id says nothing about the shard.
  CHECK_THROWS_WITH(parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "3"},
                                             {"SLURM_ARRAY_TASK_COUNT", "3"},
                                             {"SLURM_ARRAY_TASK_MIN", "1"},
                                             {"SLURM_ARRAY_TASK_MAX", "7"},
                                             {"SLURM_ARRAY_TASK_STEP", "1"}})),
                    Catch::Contains("not an evenly spaced range"));
  CHECK_THROWS_WITH(parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "2"}})),
                    Catch::Contains("SLURM_ARRAY_TASK_MIN is not set"));
  CHECK_THROWS_WITH(parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "x"},
                                             {"SLURM_ARRAY_TASK_MIN", "0"},
                                             {"SLURM_ARRAY_TASK_MAX", "3"}})),
                    Catch::Contains("'x', not a whole number"));
}

TEST_CASE("the shard option: auto/N reads a Kubernetes Indexed Job's completion index", "[shard]") {
  const auto job = env({{"JOB_COMPLETION_INDEX", "3"}});
  CHECK(parse_shard("auto/5", job) == Shard{3, 5});
  CHECK_THROWS_WITH(parse_shard("auto", job), Catch::Contains("give --shard auto/N"));
  CHECK_THROWS_WITH(parse_shard("auto/3", job), Catch::Contains("not below the count 3"));
}

TEST_CASE("the shard option: auto says clearly when it finds neither or both environments",
          "[shard]") {
  CHECK_THROWS_WITH(parse_shard("auto", kEmpty),
                    Catch::Contains("found neither a Slurm job array") &&
                        Catch::Contains("nor a Kubernetes Indexed Job"));
  CHECK_THROWS_WITH(
      parse_shard("auto", env({{"SLURM_ARRAY_TASK_ID", "0"}, {"JOB_COMPLETION_INDEX", "0"}})),
      Catch::Contains("both a Slurm job array"));
}

TEST_CASE("run p belongs to shard p mod N: shares differ by one run at most", "[shard]") {
  using ra::rundir::runs_of_shard;
  CHECK(runs_of_shard({0, 4}, 8) == std::vector<int>{0, 4});
  CHECK(runs_of_shard({3, 4}, 8) == std::vector<int>{3, 7});
  CHECK(runs_of_shard({2, 4}, 6) == std::vector<int>{2});
  CHECK(runs_of_shard({0, 1}, 3) == std::vector<int>{0, 1, 2});
  // --seeds both with 4 runs a group (runs 0-3 same, 4-7 different), 4 shards: each shard gets
  // one run of each group.
  for (int k = 0; k < 4; ++k) {
    const std::vector<int> runs = runs_of_shard({k, 4}, 8);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0] < 4);
    CHECK(runs[1] >= 4);
  }
}

TEST_CASE("shard lock names are spelt one way", "[shard]") {
  using ra::rundir::shard_lock_name;
  using ra::rundir::shard_of_lock_name;
  CHECK(shard_lock_name(2) == "audit.shard-002.lock");
  CHECK(shard_of_lock_name("audit.shard-002.lock") == 2);
  CHECK(shard_of_lock_name("audit.shard-1234.lock") == 1234);
  CHECK_FALSE(shard_of_lock_name("audit.shard-2.lock"));
  CHECK_FALSE(shard_of_lock_name("audit.shard-0002.lock"));
  CHECK_FALSE(shard_of_lock_name("audit.shard-.lock"));
  CHECK_FALSE(shard_of_lock_name("audit.lock"));
}
