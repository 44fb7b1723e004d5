// The phases of run_audit that need no training (audit/audit.cpp): planning the runs and the
// manifest, deciding what to do with an output folder (fresh, overwrite, resume), and handing runs
// out to K jobs.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "audit/audit.h"
#include "audit/audit_jobs.h"
#include "audit/audit_plan.h"
#include "core/error.h"
#include "rundir/audit_folder_setup.h"
#include "spec/parse.h"
#include "support/temp_dir.h"

namespace {

using namespace ra::audit;
using namespace ra::compare;
using namespace ra::record;
using namespace ra::rundir;
using namespace ra::trace;
using ra::test::TempDir;

ra::spec::ExperimentSpec phases_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "plan-test", "seed": 5, "threads": 2, "device": "cpu",
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 4, 4], "classes": 2},
             "batch_size": 8},
    "model": {"input": [1, 4, 4], "layers": [{"type": "flatten"}, {"type": "dense", "units": 2}]},
    "optimizer": {"type": "sgd", "lr": 0.1},
    "train": {"epochs": 1}})"),
                              ".");
}

AuditOptions phase_options_in(const std::filesystem::path& dir, int runs) {
  AuditOptions o;
  o.runs = runs;
  o.out_dir = dir;
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

// Sets the folder up as run_audit would, without training: the manifest is written.
FolderPlan set_up(const std::filesystem::path& dir, const AuditOptions& o,
                  std::vector<std::string>* notices = nullptr) {
  AuditProgress progress;
  if (notices) progress.notice = [notices](const std::string& m) { notices->push_back(m); };
  const auto spec = phases_spec();
  AuditFolderSetup setup(dir, o.folder_use, o.report_files,
                         requested_manifest(spec, o, plan_runs(spec, o)), progress.notice);
  setup.inspect();
  return setup.apply();
}

}  // namespace

TEST_CASE("plan_runs: groups, indices and derived seeds", "[audit][plan]") {
  const auto spec = phases_spec();
  AuditOptions o = phase_options_in("out", 2);
  o.seeds = SeedPolicy::both;
  o.vary.dropout = false;
  const auto plan = plan_runs(spec, o);
  REQUIRE(plan.size() == 4);
  CHECK(plan[0].group == "same");
  CHECK(plan[1].seeds.init == 5);
  CHECK(plan[1].seeds.dropout == 5);
  CHECK(plan[2].group == "different");
  CHECK(plan[2].index == 2);
  CHECK(plan[2].seeds.init == derived_seed(5, 2));
  CHECK(plan[2].seeds.data == derived_seed(5, 2));
  CHECK(plan[2].seeds.dropout == 5);  // not varied
  CHECK(plan[3].seeds.init == derived_seed(5, 3));
  CHECK(derived_seed(5, 2) != derived_seed(5, 3));
  o.seeds = SeedPolicy::different;
  CHECK(plan_runs(spec, o)[0].group == "different");
  CHECK(plan_runs(spec, o).size() == 2);
}

TEST_CASE("plan_runs refuses no runs and a fault outside the plan", "[audit][plan]") {
  const auto spec = phases_spec();
  AuditOptions o = phase_options_in("out", 0);
  CHECK(error_of([&] { plan_runs(spec, o); }) == "--runs must be at least 1");
  o.runs = 3;
  o.fault = FaultSpec{.run = 3, .step = 0, .tensor = "dense_0.weight"};
  CHECK(error_of([&] { plan_runs(spec, o); }) == "--inject-fault: run 3 is not in 0..2");
}

TEST_CASE("requested_manifest records what decides the bits of the runs", "[audit][plan]") {
  const auto spec = phases_spec();
  AuditOptions o = phase_options_in("out", 2);
  o.mode = ra::spec::KernelMode::nondeterministic;
  o.threads = 3;
  o.snapshots.every_steps = 2;
  o.fault = FaultSpec{.run = 1, .step = 2, .tensor = "dense_0.weight", .element = 4, .bit = 1};
  o.tool_version = "9.9";
  const auto m = requested_manifest(spec, o, plan_runs(spec, o));
  CHECK(m.audit_id.empty());  // the caller's
  CHECK(m.tool_version == "9.9");
  CHECK(m.backend == "cpu");
  CHECK(m.threads == 3);
  CHECK(m.seed_policy == "same");
  CHECK(m.determinism == nlohmann::json::parse(R"({"mode":"nondeterministic","ops":{}})"));
  CHECK(m.snapshots ==
        nlohmann::json::parse(R"({"epochs":false,"every_steps":2,"batches":false})"));
  CHECK(m.fault == nlohmann::json::parse(
                       R"({"run":1,"step":2,"tensor":"dense_0.weight","element":4,"bit":1})"));
  CHECK(m.runs.size() == 2);
  CHECK(m.spec.value("name", "") == "plan-test");
}

TEST_CASE("folder setup: a fresh folder gets a new audit, a second one is refused",
          "[audit][folder]") {
  TempDir dir;
  const FolderPlan first = set_up(dir.path, phase_options_in(dir.path, 2));
  CHECK(first.new_audit);
  CHECK(first.to_train == std::vector<int>{0, 1});
  CHECK(is_audit_id(first.manifest.audit_id));
  CHECK(read_manifest(dir.path).audit_id == first.manifest.audit_id);
  const std::string refused = error_of([&] { set_up(dir.path, phase_options_in(dir.path, 2)); });
  CHECK_THAT(refused, Catch::Contains("holds another audit (audit " + first.manifest.audit_id));
  CHECK_THAT(refused, Catch::Contains("Use --resume"));
}

TEST_CASE("folder setup: resume trains the runs without a whole trace", "[audit][folder]") {
  TempDir dir;
  const FolderPlan first = set_up(dir.path, phase_options_in(dir.path, 3));
  AuditOptions resume = phase_options_in(dir.path, 3);
  resume.folder_use = FolderUse::resume;
  std::vector<std::string> notices;
  const FolderPlan resumed = set_up(dir.path, resume, &notices);
  CHECK_FALSE(resumed.new_audit);
  CHECK(resumed.manifest.audit_id == first.manifest.audit_id);
  CHECK(resumed.to_train == std::vector<int>{0, 1, 2});
  REQUIRE_FALSE(notices.empty());
  CHECK_THAT(notices[0], Catch::Contains("resuming audit " + first.manifest.audit_id) &&
                             Catch::Contains("training run(s) 0, 1, 2"));
  // Another audit requested: refused, naming what differs.
  resume.runs = 2;
  const std::string refused = error_of([&] { set_up(dir.path, resume); });
  CHECK_THAT(refused, Catch::Contains("it is not the audit requested"));
  // Resume where there is nothing: a new audit, said so.
  TempDir empty;
  notices.clear();
  AuditOptions nothing = phase_options_in(empty.path, 1);
  nothing.folder_use = FolderUse::resume;
  CHECK(set_up(empty.path, nothing, &notices).new_audit);
  CHECK(notices == std::vector<std::string>{"nothing to resume in " + empty.path.string() +
                                            ": starting the audit"});
}

TEST_CASE("folder setup: overwrite replaces the audit, keeps files not its own",
          "[audit][folder]") {
  TempDir dir;
  const FolderPlan first = set_up(dir.path, phase_options_in(dir.path, 1));
  std::ofstream(dir.path / "notes.txt") << "mine";
  AuditOptions o = phase_options_in(dir.path, 1);
  o.folder_use = FolderUse::overwrite;
  std::vector<std::string> notices;
  const FolderPlan second = set_up(dir.path, o, &notices);
  CHECK(second.new_audit);
  CHECK(second.manifest.audit_id != first.manifest.audit_id);
  CHECK(std::filesystem::exists(dir.path / "notes.txt"));
  CHECK(read_manifest(dir.path).audit_id == second.manifest.audit_id);
}

TEST_CASE("run_jobs: every run once, the first failure stops and is rethrown", "[audit][jobs]") {
  for (int jobs : {1, 3}) {
    INFO("jobs " << jobs);
    std::mutex m;
    std::multiset<std::size_t> ran;
    run_jobs(10, jobs, [&](std::size_t i) {
      std::lock_guard lock(m);
      ran.insert(i);
    });
    CHECK(ran == std::multiset<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  // One job: the runs after a failure are never started.
  std::vector<std::size_t> started;
  CHECK_THROWS_WITH(run_jobs(5, 1,
                             [&](std::size_t i) {
                               started.push_back(i);
                               if (i == 1) throw std::runtime_error("run 1 failed");
                             }),
                    "run 1 failed");
  CHECK(started == std::vector<std::size_t>{0, 1});
  // Several jobs: the failure is rethrown after every job stopped; no run starts twice.
  std::atomic<int> calls{0};
  CHECK_THROWS_WITH(run_jobs(50, 4,
                             [&](std::size_t i) {
                               ++calls;
                               if (i == 0) throw std::runtime_error("run 0 failed");
                             }),
                    "run 0 failed");
  CHECK(calls.load() <= 50);
  run_jobs(0, 4, [](std::size_t) { throw std::logic_error("never called"); });
}
