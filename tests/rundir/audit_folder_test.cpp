// The audit folder's bookkeeping where it needs no audit: which names are the tool's own, which
// report files are the folder's. (Folders of real audits: refused, overwritten, resumed, compared,
// locked: tests/audit/audit_folder_test.cpp, tests/audit/audit_phases_test.cpp.)
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rundir/audit_folder.h"
#include "rundir/audit_folder_setup.h"
#include "support/temp_dir.h"

TEST_CASE("report_in_folder: only a report file directly in the folder", "[rundir][folder]") {
  using ra::rundir::report_in_folder;
  ra::test::TempDir dir;
  CHECK(report_in_folder(dir.path / "report.json", dir.path) == "report.json");
  CHECK_FALSE(report_in_folder(dir.path / "sub" / "report.json", dir.path));
  CHECK_FALSE(report_in_folder("-", dir.path));
  CHECK_FALSE(report_in_folder("", dir.path));
}

TEST_CASE("a data-parallel run's per-rank checkpoint files are the tool's own",
          "[rundir][folder]") {
  using ra::rundir::is_snapshot_file_name;
  // Rank 0 keeps the run's names; rank R's have ".rank-R" before the suffix
  // (lib/python/repro_audit/checkpoint.py), so --resume and --overwrite remove them.
  for (const char* own :
       {"checkpoint-step-2.pt", "checkpoint-step-2.recorder.json", "checkpoint-step-12.rank-1.pt",
        "checkpoint-step-12.rank-13.recorder.json"})
    CHECK(is_snapshot_file_name(own));
  for (const char* other :
       {"checkpoint-step-2.rank-.pt", "checkpoint-step-.rank-1.pt",
        "checkpoint-step-2.rank-x.recorder.json", "checkpoint-step-2.rank-1.safetensors",
        "checkpoint-step-2.rank-1.json"})
    CHECK_FALSE(is_snapshot_file_name(other));
}

TEST_CASE("an exec run's checkpoint folder is the tool's whole", "[rundir][folder]") {
  namespace fs = std::filesystem;
  const auto write_text = [](const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  };
  // run-NNN/checkpoints/ (REPRO_AUDIT_CHECKPOINT_DIR): whatever the script saved there, under
  // any name, goes with the run (--resume retraining it, --overwrite); a link there is refused.
  ra::test::TempDir dir;
  const fs::path run = dir.path / "run-001";
  fs::create_directories(run / "checkpoints" / "sub");
  write_text(run / "checkpoints" / "epoch-1.pt", "x");
  write_text(run / "checkpoints" / "sub" / "model.pth", "y");
  write_text(run / "command.log", "log");
  const ra::rundir::FolderContents c = ra::rundir::scan_audit_folder(dir.path);
  CHECK(c.own == std::vector<std::string>{"run-001/checkpoints/", "run-001/command.log"});
  CHECK(c.unrecognised.empty());
  ra::rundir::remove_run_snapshots(dir.path, 1);
  CHECK_FALSE(fs::exists(run));
  fs::create_directories(run / "checkpoints");
  write_text(run / "checkpoints" / "epoch-1.pt", "x");
  CHECK(ra::rundir::remove_own_files(dir.path, ra::rundir::scan_audit_folder(dir.path)).empty());
  CHECK_FALSE(fs::exists(run));
  fs::create_directories(run);
  fs::create_directory_symlink(dir.path, run / "checkpoints");
  CHECK(ra::rundir::scan_audit_folder(dir.path).refused ==
        std::vector<std::string>{"run-001/checkpoints (a symbolic link, not a folder)"});
}
