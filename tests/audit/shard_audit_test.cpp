// Sharded audits (rundir/shard.h): shards started at once create one manifest and train their
// share into one folder; compare of that folder is the report of the same audit run in one
// process (deterministic, nondeterministic with a divergence, --seeds both); an unfinished shard
// makes an incomplete report that names it (its text, exit code and JUnit case:
// tests/cli/shard_cli_test.cpp); shards that disagree are refused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "audit/audit.h"
#include "audit/audit_plan.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "record/fault_check.h"
#include "rundir/audit_folder.h"
#include "rundir/manifest.h"
#include "rundir/shard_folder_setup.h"
#include "spec/parse.h"
#include "support/audit_options.h"
#include "support/report_json.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ra::audit::AuditOptions;
using ra::rundir::Shard;
using ra::test::TempDir;

ra::spec::ExperimentSpec spec_of(const std::string& mode, int seed = 9) {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "shard-test", "seed": )" + std::to_string(seed) +
                                                    R"(, "threads": 1,
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 6, 6], "classes": 3},
             "eval": {"format": "random", "samples": 16, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 8, "shuffle": true},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "train": {"epochs": 2},
    "determinism": {"mode": ")" + mode + R"("}})"),
                              ".");
}

// Every shard of `count`, each on its own thread, all started at once (as a job array starts).
void run_shards(const ra::spec::ExperimentSpec& spec, AuditOptions o, int count,
                const std::vector<int>& which = {}) {
  std::vector<int> shards = which;
  if (shards.empty())
    for (int k = 0; k < count; ++k) shards.push_back(k);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> failures(shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i) {
    threads.emplace_back([&, i] {
      AuditOptions mine = o;
      mine.shard = Shard{shards[i], count};
      try {
        const ra::audit::AuditResult r = ra::audit::run_audit(spec, mine);
        if (!r.shard) throw std::logic_error("a shard gave no shard outcome");
      } catch (...) {
        failures[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
}

ra::compare::ComparisonResult compare_folder(const fs::path& dir) {
  return ra::audit::compare_inputs({dir}, {});
}

}  // namespace

TEST_CASE("a sharded audit's report is the report of the audit run in one process",
          "[audit][shard]") {
  struct Case {
    const char* name;
    std::string mode;
    int runs, shards;
    ra::audit::SeedPolicy seeds = ra::audit::SeedPolicy::same;
    bool fault = false;
  };
  const std::vector<Case> cases = {
      {"deterministic, 4 runs in 4 shards", "deterministic", 4, 4},
      // One thread makes a nondeterministic run's reductions repeatable; the injected one-bit
      // fault makes run 1 part from the others at a known step, in both audits alike.
      {"nondeterministic with a divergence, 3 runs in 2 shards", "nondeterministic", 3, 2,
       ra::audit::SeedPolicy::same, true},
      {"--seeds both, 2+2 runs in 3 shards", "deterministic", 2, 3, ra::audit::SeedPolicy::both},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      TempDir single, sharded;
      AuditOptions o = ra::test::audit_options_in(single.path, c.runs);
      o.seeds = c.seeds;
      if (c.fault) o.fault = ra::record::parse_fault("run=1,step=2,tensor=conv2d_0.weight,bit=3");
      const ra::audit::AuditResult one = ra::audit::run_audit(spec_of(c.mode), o);
      o.out_dir = sharded.path;
      run_shards(spec_of(c.mode), o, c.shards);

      const ra::compare::ComparisonResult merged = compare_folder(sharded.path);
      CHECK_FALSE(merged.incomplete());
      REQUIRE(merged.sources.audit_folders.size() == 1);
      CHECK(merged.sources.audit_folders[0].shards == c.shards);
      CHECK(ra::test::without_paths_and_time(to_json(merged)) ==
            ra::test::without_paths_and_time(to_json(one.comparison)));
      // The reports say something: a divergence where one was injected, identity elsewhere.
      CHECK(merged.identity.identical == !c.fault);
      CHECK(merged.first_divergence.has_value() == c.fault);
      CHECK(merged.runs.size() ==
            static_cast<std::size_t>(c.seeds == ra::audit::SeedPolicy::both ? 2 * c.runs : c.runs));
      // Every shard lock and the folder's lock went with their shards.
      for (const auto& e : fs::directory_iterator(sharded.path))
        CHECK(e.path().extension() != ".lock");
    }
  }
}

TEST_CASE("an unfinished shard makes an incomplete report that names it", "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  const AuditOptions o = ra::test::audit_options_in(dir.path, 4);
  run_shards(spec, o, 4, {0, 2});

  // Shard 3 is running (its lock is held), shard 1 is not.
  std::optional<ra::FileLock> running =
      ra::FileLock::try_lock(dir.path / ra::rundir::shard_lock_name(3),
                             ra::FileLock::Mode::exclusive, "pid 4242 on node-9");
  REQUIRE(running);
  const ra::compare::ComparisonResult r = compare_folder(dir.path);
  CHECK(r.incomplete());
  CHECK(r.identity.identical);  // over runs 0 and 2
  REQUIRE(r.sources.audit_folders.size() == 1);
  const ra::compare::AuditFolderCheck& f = r.sources.audit_folders[0];
  CHECK(f.runs == std::vector<int>{0, 2});
  REQUIRE(f.missing_runs.size() == 2);
  CHECK(f.missing_runs[0].run == 1);
  CHECK(f.missing_runs[0].shard == 1);
  CHECK(f.missing_runs[1].shard == 3);
  REQUIRE(f.shard_states.size() == 4);
  CHECK(f.shard_states[0].finished());
  CHECK_FALSE(f.shard_states[1].finished());
  CHECK(f.shard_states[1].running.empty());
  CHECK(f.shard_states[3].running == "pid 4242 on node-9");

  const nlohmann::json j = to_json(r);
  CHECK(j["verdict"]["complete"] == false);
  CHECK(j["audit_folders"][0]["shards"]["count"] == 4);
  CHECK(j["audit_folders"][0]["shards"]["states"][3]["running"] == "pid 4242 on node-9");
  CHECK(j["audit_folders"][0]["missing_runs"][1]["shard"] == 3);
  // The last shards finish: complete.
  running.reset();
  run_shards(spec, o, 4, {1, 3});
  const ra::compare::ComparisonResult done = compare_folder(dir.path);
  CHECK_FALSE(done.incomplete());
  CHECK(done.runs.size() == 4);
  CHECK(to_json(done)["verdict"]["complete"] == true);
}

TEST_CASE("shards that disagree on the audit are refused and write nothing", "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  AuditOptions o = ra::test::audit_options_in(dir.path, 2);
  run_shards(spec, o, 2, {0});
  const std::string manifest_before = ra::rundir::read_manifest(dir.path).audit_id;
  auto refused = [&](const ra::spec::ExperimentSpec& s, AuditOptions x, Shard shard) {
    x.shard = shard;
    try {
      ra::audit::run_audit(s, x);
    } catch (const ra::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  AuditOptions three = o;
  three.runs = 3;
  CHECK_THAT(refused(spec, three, {1, 2}),
             Catch::Contains("cannot join audit " + manifest_before) &&
                 Catch::Contains("runs: 2 planned in the folder, 3 planned requested"));
  CHECK_THAT(refused(spec, o, {0, 1}), Catch::Contains("shards: 2 in the folder, 1 requested"));
  CHECK_THAT(refused(spec_of("deterministic", 10), o, {1, 2}), Catch::Contains("spec digest"));
  CHECK_THAT(refused(spec_of("nondeterministic"), o, {1, 2}), Catch::Contains("determinism"));
  // Nothing of the refused shards reached the folder.
  CHECK_FALSE(fs::exists(dir.path / ra::rundir::trace_name(1)));
  CHECK(ra::rundir::read_manifest(dir.path).audit_id == manifest_before);

  // A single-process audit does not join shards, nor shards a single-process audit.
  CHECK_THROWS_WITH(ra::audit::run_audit(spec, o), Catch::Contains("holds another audit"));
  TempDir single;
  ra::audit::run_audit(spec, ra::test::audit_options_in(single.path, 2));
  CHECK_THAT(refused(spec, ra::test::audit_options_in(single.path, 2), {0, 2}),
             Catch::Contains("shards: none (an audit in one process) in the folder, 2 requested"));
  TempDir foreign;
  std::ofstream(foreign.path / "run-000.trace.jsonl") << "not ours\n";
  CHECK_THAT(refused(spec, ra::test::audit_options_in(foreign.path, 2), {0, 2}),
             Catch::Contains("shards start in an empty folder"));
}

TEST_CASE("what a shard cannot do is refused before anything is written", "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  AuditOptions o = ra::test::audit_options_in(dir.path / "out", 2);
  o.shard = Shard{0, 3};
  CHECK_THROWS_WITH(ra::audit::run_audit(spec, o),
                    Catch::Contains("plans 2 run(s), so at most 2 shards"));
  o.shard = Shard{0, 2};
  o.folder_use = ra::rundir::FolderUse::overwrite;
  CHECK_THROWS_WITH(ra::audit::run_audit(spec, o), Catch::Contains("--overwrite with --shard"));
  o.folder_use = ra::rundir::FolderUse::fresh;
  o.report_files = {dir.path / "out" / "report.json"};
  CHECK_THROWS_WITH(ra::audit::run_audit(spec, o), Catch::Contains("a shard makes no report"));
  CHECK_FALSE(fs::exists(dir.path / "out" / ra::rundir::kManifestName));
}

TEST_CASE("a shard run again trains only its runs without a whole trace", "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  AuditOptions o = ra::test::audit_options_in(dir.path, 4);
  o.shard = Shard{0, 2};
  const ra::audit::AuditResult first = ra::audit::run_audit(spec, o);
  CHECK(first.trained_runs == std::vector<int>{0, 2});
  REQUIRE(first.shard);
  CHECK(first.shard->created_manifest);
  CHECK(first.shard->missing_runs == std::vector<int>{1, 3});

  // A requeued shard: run 2 was lost, a killed write of it left a temporary; another shard's
  // write in progress (run 1's temporary) is not this shard's to remove.
  fs::remove(dir.path / ra::rundir::trace_name(2));
  std::ofstream(dir.path / (ra::rundir::trace_name(2) + ".tmp-99999-0")) << "partial";
  std::ofstream(dir.path / (ra::rundir::trace_name(1) + ".tmp-99998-0")) << "other shard";
  const ra::audit::AuditResult again = ra::audit::run_audit(spec, o);
  CHECK(again.trained_runs == std::vector<int>{2});
  CHECK(again.shard->already_whole == std::vector<int>{0});
  CHECK_FALSE(again.shard->created_manifest);
  CHECK_FALSE(fs::exists(dir.path / (ra::rundir::trace_name(2) + ".tmp-99999-0")));
  CHECK(fs::exists(dir.path / (ra::rundir::trace_name(1) + ".tmp-99998-0")));
  fs::remove(dir.path / (ra::rundir::trace_name(1) + ".tmp-99998-0"));

  // A single-process --resume finishes the audit of shards that will not come back.
  AuditOptions resume = ra::test::audit_options_in(dir.path, 4);
  resume.folder_use = ra::rundir::FolderUse::resume;
  const ra::audit::AuditResult finished = ra::audit::run_audit(spec, resume);
  CHECK(finished.trained_runs == std::vector<int>{1, 3});
  CHECK_FALSE(finished.comparison.incomplete());
  CHECK(finished.comparison.identity.identical);
}

TEST_CASE("a shard runs once at a time, and shards keep a single-process audit out",
          "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  AuditOptions o = ra::test::audit_options_in(dir.path, 2);
  o.shard = Shard{1, 2};
  {
    const ra::rundir::ShardLocks held(dir.path, Shard{1, 2});
    CHECK_THROWS_WITH(
        ra::audit::run_audit(spec, o),
        Catch::Contains("shard 1/2 of the audit in") && Catch::Contains("is already running (pid"));
    // Shard 0 may start beside it; a single-process audit may not.
    AuditOptions zero = o;
    zero.shard = Shard{0, 2};
    ra::audit::run_audit(spec, zero);
    AuditOptions resume = ra::test::audit_options_in(dir.path, 2);
    resume.folder_use = ra::rundir::FolderUse::resume;
    CHECK_THROWS_WITH(ra::audit::run_audit(spec, resume),
                      Catch::Contains("is in use by the shards of an audit"));
  }
  // And a single-process audit keeps shards out.
  TempDir busy;
  const ra::rundir::FolderLock lock(busy.path);
  AuditOptions other = ra::test::audit_options_in(busy.path, 2);
  other.shard = Shard{0, 2};
  CHECK_THROWS_WITH(ra::audit::run_audit(spec, other),
                    Catch::Contains("a shard cannot join a folder while an audit runs there"));
}

TEST_CASE("of shards racing to start an audit, exactly one creates the manifest",
          "[audit][shard]") {
  TempDir dir;
  const auto spec = spec_of("deterministic");
  const AuditOptions o = ra::test::audit_options_in(dir.path, 8);
  ra::rundir::AuditManifest requested =
      ra::audit::requested_manifest(spec, o, ra::audit::plan_runs(spec, o));
  requested.shards = 8;
  for (int round = 0; round < 5; ++round) {
    fs::remove(dir.path / ra::rundir::kManifestName);
    constexpr int kRacers = 8;
    std::vector<std::thread> racers;
    std::vector<int> created(kRacers, 0);
    std::vector<std::string> ids(kRacers);
    for (int i = 0; i < kRacers; ++i) {
      racers.emplace_back([&, i] {
        ra::rundir::AuditManifest m = requested;
        m.audit_id = ra::rundir::new_audit_id();
        ids[i] = m.audit_id;
        created[i] = ra::rundir::create_manifest(dir.path, m) ? 1 : 0;
      });
    }
    for (std::thread& t : racers) t.join();
    int winners = 0;
    std::string winner;
    for (int i = 0; i < kRacers; ++i) {
      winners += created[i];
      if (created[i]) winner = ids[i];
    }
    CHECK(winners == 1);
    CHECK(ra::rundir::read_manifest(dir.path).audit_id == winner);
    // No temporary left behind by the losers.
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file() ? 1 : 0;
    CHECK(files == 1);
  }
}
