// The audit folder: manifest, lock, --overwrite, --resume, and compare through the manifest.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "audit/audit.h"
#include "core/error.h"
#include "formats/safetensors.h"
#include "record/fault_check.h"
#include "rundir/audit_folder.h"
#include "rundir/manifest.h"
#include "spec/parse.h"
#include "support/audit_options.h"
#include "support/file_text.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"

namespace {

using ra::test::read_text;
using ra::test::TempDir;

namespace fs = std::filesystem;
using ra::audit::AuditOptions;
using ra::rundir::FolderUse;

ra::spec::ExperimentSpec tiny_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "name": "folder-test", "seed": 9, "threads": 1,
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 6, 6], "classes": 3},
             "batch_size": 8},
    "model": {"input": [1, 6, 6], "layers": [
      {"type": "conv2d", "filters": 2, "kernel": 3, "activation": "relu"},
      {"type": "flatten"}, {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.05},
    "train": {"epochs": 2}})"),
                              ".");
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The bits of every run's outcome, as the report states them.
std::vector<std::uint32_t> final_bits(const ra::compare::ComparisonResult& r) {
  std::vector<std::uint32_t> bits;
  for (const auto& run : r.runs) bits.push_back(run.final_loss_bits);
  return bits;
}

}  // namespace

TEST_CASE("a manifest round-trips and names what differs", "[audit][folder]") {
  TempDir dir;
  const auto result = ra::audit::run_audit(tiny_spec(), ra::test::audit_options_in(dir.path, 2));
  const auto m = ra::rundir::read_manifest(dir.path);
  REQUIRE(m.audit_id == result.audit_id);
  REQUIRE(ra::trace::is_audit_id(m.audit_id));
  REQUIRE(m.runs.size() == 2);
  REQUIRE(m.runs[1].seeds.init == 9);
  REQUIRE(m.threads == 1);
  REQUIRE(m.backend == "cpu");
  REQUIRE(m.determinism.at("mode") == "deterministic");
  REQUIRE(m.created.size() == 20);
  const auto again = ra::rundir::manifest_from_json(ra::rundir::to_json(m), "x");
  REQUIRE(ra::rundir::to_json(again) == ra::rundir::to_json(m));
  REQUIRE(ra::rundir::manifest_differences(m, again).empty());
  // Every trace and snapshot carries the audit id.
  REQUIRE(ra::trace::read_trace(dir.path / "run-001.trace.jsonl").header.audit_id == m.audit_id);
  REQUIRE(ra::formats::read_safetensors(dir.path / "run-001" / "weights-final.safetensors")
              .metadata.at("audit_id") == m.audit_id);

  auto other = m;
  other.threads = 4;
  other.runs.pop_back();
  const auto differences = ra::rundir::manifest_differences(m, other);
  REQUIRE(differences.size() == 2);
  REQUIRE(differences[0] == "threads: 1 in the folder, 4 requested");
  REQUIRE(differences[1] == "runs: 2 planned in the folder, 1 planned requested");

  // A damaged manifest names the file and the field.
  auto bad = ra::rundir::to_json(m);
  bad["runs"][1]["seeds"]["data"] = "seven";
  try {
    ra::rundir::manifest_from_json(bad, "f/audit.json");
    FAIL("accepted");
  } catch (const ra::InputError& e) {
    REQUIRE(std::string(e.what()) ==
            "f/audit.json: field 'runs[1].seeds.data' must be an unsigned integer");
  }
  bad = ra::rundir::to_json(m);
  bad["audit_id"] = "../../x";
  REQUIRE_THROWS_WITH(ra::rundir::manifest_from_json(bad, "f"),
                      Catch::Contains("audit_id") && Catch::Contains("32 lowercase hex"));
}

TEST_CASE("a second lock on an audit folder fails at once and names the holder",
          "[audit][folder]") {
  TempDir dir;
  {
    const ra::rundir::FolderLock first(dir.path);
    REQUIRE(ra::rundir::FolderLock::holder(dir.path) == static_cast<long>(getpid()));
    try {
      const ra::rundir::FolderLock second(dir.path);
      FAIL("two locks");
    } catch (const ra::InputError& e) {
      const std::string what = e.what();
      REQUIRE(what.find(dir.path.string()) != std::string::npos);
      REQUIRE(what.find("in use by another audit (pid " + std::to_string(getpid()) + ")") !=
              std::string::npos);
    }
    // An audit run into the locked folder is refused the same way, before it trains.
    REQUIRE_THROWS_WITH(ra::audit::run_audit(tiny_spec(), ra::test::audit_options_in(dir.path, 1)),
                        Catch::Contains("in use by another audit"));
  }
  // Released: no holder, no lock file left, and the folder can be locked again.
  REQUIRE_FALSE(ra::rundir::FolderLock::holder(dir.path));
  REQUIRE_FALSE(fs::exists(dir.path / "audit.lock"));
  const ra::rundir::FolderLock again(dir.path);
}

TEST_CASE("a folder holding an audit is refused, and overwriting removes only the tool's files",
          "[audit][folder]") {
  TempDir dir;
  auto o = ra::test::audit_options_in(dir.path, 2);
  o.snapshots.epochs = true;
  o.snapshots.batches = true;
  const auto first = ra::audit::run_audit(tiny_spec(), o);
  // Files of the user's beside and inside the audit's, and debris of a killed atomic write.
  write_text(dir.path / "notes.txt", "mine");
  write_text(dir.path / "run-1.trace.jsonl", "not the tool's spelling");
  write_text(dir.path / "run-000" / "plot.png", "mine too");
  write_text(dir.path / "run-001.trace.jsonl.tmp-4242-0", "partial");

  SECTION("a new audit into it is refused, saying how to proceed") {
    try {
      ra::audit::run_audit(tiny_spec(), ra::test::audit_options_in(dir.path, 2));
      FAIL("accepted");
    } catch (const ra::InputError& e) {
      const std::string what = e.what();
      REQUIRE(what.find("holds another audit (audit " + first.audit_id) != std::string::npos);
      for (const char* hint : {"--resume", "--overwrite", "another --out"}) {
        INFO(hint);
        REQUIRE(what.find(hint) != std::string::npos);
      }
    }
    REQUIRE(ra::rundir::read_manifest(dir.path).audit_id == first.audit_id);  // untouched
  }
  SECTION("unrecognised run files alone are refused too") {
    TempDir other;
    write_text(other.path / "run-7.trace.jsonl", "x");
    REQUIRE_THROWS_WITH(
        ra::audit::run_audit(tiny_spec(), ra::test::audit_options_in(other.path, 1)),
        Catch::Contains("run files repro-audit did not write (run-7.trace.jsonl)"));
  }
  SECTION("--overwrite") {
    auto again = ra::test::audit_options_in(dir.path, 1);
    again.folder_use = FolderUse::overwrite;
    std::vector<std::string> notices;
    ra::audit::AuditProgress progress;
    progress.notice = [&](const std::string& m) { notices.push_back(m); };
    const auto second = ra::audit::run_audit(tiny_spec(), again, progress);
    REQUIRE(second.audit_id != first.audit_id);
    REQUIRE(read_text(dir.path / "notes.txt") == "mine");
    REQUIRE(fs::exists(dir.path / "run-1.trace.jsonl"));
    REQUIRE(fs::exists(dir.path / "run-000" / "plot.png"));
    // The first audit's files are gone: run 1 (only in the first), its epoch snapshots and
    // batch lists, the temporary file.
    REQUIRE_FALSE(fs::exists(dir.path / "run-001.trace.jsonl"));
    REQUIRE_FALSE(fs::exists(dir.path / "run-001"));
    REQUIRE_FALSE(fs::exists(dir.path / "run-000" / "weights-epoch-0.safetensors"));
    REQUIRE_FALSE(fs::exists(dir.path / "run-000" / "batches.json"));
    REQUIRE_FALSE(fs::exists(dir.path / "run-001.trace.jsonl.tmp-4242-0"));
    REQUIRE(second.comparison.runs.size() == 1);
    REQUIRE(notices.size() == 2);
    REQUIRE(notices[1].find("left in place, not repro-audit's: notes.txt, run-000/plot.png, "
                            "run-1.trace.jsonl") != std::string::npos);
    // The report names the leftover run file as foreign, and compares only the manifest's run.
    const auto& folder = second.comparison.sources.audit_folders.at(0);
    REQUIRE(folder.audit_id == second.audit_id);
    REQUIRE(folder.foreign_files.size() == 2);
    REQUIRE(folder.foreign_files[0].file == "run-000/plot.png");
    REQUIRE(folder.foreign_files[1].file == "run-1.trace.jsonl");
  }
}

TEST_CASE("resuming trains only the runs without a whole trace and gives the same report",
          "[audit][folder]") {
  TempDir whole_dir, dir;
  auto o = ra::test::audit_options_in(whole_dir.path, 3);
  o.snapshots.epochs = true;
  o.mode = ra::spec::KernelMode::nondeterministic;  // any mode: seeds and order decide the bits
  o.threads = 1;
  const auto whole = ra::audit::run_audit(tiny_spec(), o);

  o.out_dir = dir.path;
  const auto interrupted = ra::audit::run_audit(tiny_spec(), o);
  const std::string run0 = read_text(dir.path / "run-000.trace.jsonl");
  // As a kill during run 1 leaves it: run 1's trace never renamed, its snapshots partial, run 2
  // never started (its folder gone).
  fs::rename(dir.path / "run-001.trace.jsonl", dir.path / "run-001.trace.jsonl.tmp-999-3");
  fs::remove(dir.path / "run-001" / "weights-final.safetensors");
  write_text(dir.path / "run-001" / "weights-epoch-1.safetensors.tmp-999-7", "half");
  fs::remove(dir.path / "run-002.trace.jsonl");
  fs::remove_all(dir.path / "run-002");

  // compare names the missing runs and the partial trace.
  const auto partial = ra::audit::compare_inputs({dir.path}, {});
  REQUIRE(partial.runs.size() == 1);
  const auto& check = partial.sources.audit_folders.at(0);
  REQUIRE(check.runs == std::vector<int>{0});
  REQUIRE(check.missing_runs.size() == 2);
  REQUIRE(check.missing_runs[0].run == 1);
  REQUIRE(check.missing_runs[0].reason.find("partial run-001.trace.jsonl.tmp-999-3") !=
          std::string::npos);
  REQUIRE(check.missing_runs[1].reason == "no trace run-002.trace.jsonl");

  SECTION("the same audit resumes") {
    o.folder_use = FolderUse::resume;
    o.jobs = 2;  // jobs do not decide bits
    const auto resumed = ra::audit::run_audit(tiny_spec(), o);
    REQUIRE(resumed.audit_id == interrupted.audit_id);
    REQUIRE(resumed.trained_runs == std::vector<int>{1, 2});
    REQUIRE(read_text(dir.path / "run-000.trace.jsonl") == run0);  // not retrained
    REQUIRE_FALSE(fs::exists(dir.path / "run-001.trace.jsonl.tmp-999-3"));
    REQUIRE_FALSE(fs::exists(dir.path / "run-001" / "weights-epoch-1.safetensors.tmp-999-7"));
    REQUIRE(fs::exists(dir.path / "run-002" / "weights-epoch-1.safetensors"));
    // The report is the uninterrupted audit's, bit for bit (timings and sources aside).
    auto a = ra::compare::to_json(whole.comparison), b = ra::compare::to_json(resumed.comparison);
    for (auto* j : {&a, &b}) {
      j->erase("runs");
      j->erase("statistics");
      j->erase("audit_folders");
    }
    REQUIRE(a == b);
    REQUIRE(final_bits(whole.comparison) == final_bits(resumed.comparison));
    REQUIRE(resumed.comparison.sources.audit_folders.at(0).missing_runs.empty());
    // Resuming a whole audit trains nothing.
    REQUIRE(ra::audit::run_audit(tiny_spec(), o).trained_runs.empty());
  }
  SECTION("another audit is refused, naming what differs") {
    auto other = o;
    other.folder_use = FolderUse::resume;
    other.runs = 4;
    other.mode = ra::spec::KernelMode::deterministic;
    try {
      ra::audit::run_audit(tiny_spec(), other);
      FAIL("resumed another audit");
    } catch (const ra::InputError& e) {
      const std::string what = e.what();
      REQUIRE(what.find("it is not the audit requested") != std::string::npos);
      REQUIRE(what.find("determinism: {\"mode\":\"nondeterministic\"") != std::string::npos);
      REQUIRE(what.find("runs: 3 planned in the folder, 4 planned requested") != std::string::npos);
    }
    REQUIRE(fs::exists(dir.path / "run-001.trace.jsonl.tmp-999-3"));  // nothing was touched
  }
}

TEST_CASE("compare of a folder reads its manifest's runs and names foreign files",
          "[audit][folder]") {
  TempDir a_dir, b_dir;
  auto o = ra::test::audit_options_in(a_dir.path, 3);
  const auto a = ra::audit::run_audit(tiny_spec(), o);
  o.out_dir = b_dir.path;
  o.fault = ra::record::parse_fault("run=1,step=2,tensor=dense_0.weight,element=1,bit=3");
  const auto b = ra::audit::run_audit(tiny_spec(), o);
  REQUIRE(b.comparison.diverged());

  // Audit b's faulty run 1 (trace and snapshot) copied into audit a's folder.
  fs::copy_file(b_dir.path / "run-001.trace.jsonl", a_dir.path / "run-002.trace.jsonl",
                fs::copy_options::overwrite_existing);
  fs::copy_file(b_dir.path / "run-001.trace.jsonl", a_dir.path / "run-005.trace.jsonl");
  fs::copy_file(b_dir.path / "run-001" / "weights-final.safetensors",
                a_dir.path / "run-001" / "weights-final.safetensors",
                fs::copy_options::overwrite_existing);

  const auto r = ra::audit::compare_inputs({a_dir.path}, {});
  REQUIRE(r.runs.size() == 2);  // runs 0 and 1 are a's
  REQUIRE_FALSE(r.diverged());
  const auto& check = r.sources.audit_folders.at(0);
  REQUIRE(check.audit_id == a.audit_id);
  REQUIRE(check.planned_runs == 3);
  REQUIRE(check.runs == std::vector<int>{0, 1});
  REQUIRE(check.missing_runs.size() == 1);
  REQUIRE(check.missing_runs[0].run == 2);
  REQUIRE(check.foreign_files.size() == 2);
  REQUIRE(check.foreign_files[0].file == "run-002.trace.jsonl");
  REQUIRE(check.foreign_files[0].reason == "belongs to audit " + b.audit_id);
  REQUIRE(check.foreign_files[1].file == "run-005.trace.jsonl");
  REQUIRE(check.foreign_files[1].reason == "run 5 is not in the manifest");
  // The stale snapshot is not measured: no final snapshot comparison, and it is named.
  REQUIRE(r.sources.ignored_snapshots.size() == 1);
  REQUIRE(r.sources.ignored_snapshots[0].find("weights-final.safetensors: belongs to audit " +
                                              b.audit_id) != std::string::npos);
  for (const auto& s : r.snapshots) REQUIRE(s.point != "final");

  // Explicit files still compare across audits (traces from anywhere).
  const auto files = ra::audit::compare_inputs(
      {a_dir.path / "run-000.trace.jsonl", b_dir.path / "run-001.trace.jsonl"}, {});
  REQUIRE(files.runs.size() == 2);
  REQUIRE(files.diverged());
  REQUIRE(files.sources.audit_folders.empty());

  SECTION("without a manifest: every trace, noted; traces of two audits are refused") {
    fs::remove(a_dir.path / "audit.json");
    REQUIRE_THROWS_WITH(ra::audit::compare_inputs({a_dir.path}, {}),
                        Catch::Contains("has no audit.json and its traces are of 2 audits"));
    fs::remove(a_dir.path / "run-002.trace.jsonl");
    fs::remove(a_dir.path / "run-005.trace.jsonl");
    const auto old = ra::audit::compare_inputs({a_dir.path}, {});
    REQUIRE(old.runs.size() == 2);
    REQUIRE(old.sources.audit_folders.at(0).audit_id.empty());
    REQUIRE(old.sources.audit_folders.at(0).notes.at(0).find("no manifest vouches") !=
            std::string::npos);
  }
}

TEST_CASE("traces without an audit id are read as older traces", "[audit][folder]") {
  TempDir dir;
  ra::audit::run_audit(tiny_spec(), ra::test::audit_options_in(dir.path, 1));
  const std::string text = read_text(dir.path / "run-000.trace.jsonl");
  const auto line_end = text.find('\n');
  auto header = nlohmann::json::parse(text.substr(0, line_end));
  header.erase("audit_id");
  const auto older = ra::trace::parse_trace(header.dump() + text.substr(line_end), "old");
  REQUIRE(older.header.audit_id.empty());
  REQUIRE(ra::trace::serialize_trace(older).find("audit_id") == std::string::npos);
  header["audit_id"] = 42;
  REQUIRE_THROWS_WITH(ra::trace::parse_trace(header.dump() + text.substr(line_end), "t"),
                      Catch::Contains("t:1") && Catch::Contains("audit_id"));
}
