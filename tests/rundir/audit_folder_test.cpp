// The audit folder's bookkeeping where it needs no audit: which names are the tool's own, which
// report files are the folder's. (Folders of real audits: refused, overwritten, resumed, compared,
// locked: tests/audit/audit_folder_test.cpp, tests/audit/audit_phases_test.cpp.)
#include <catch2/catch.hpp>

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
