// What exec reads of an interrupted run's recorder's file (audit/interrupt_state.h): a real one
// written by the recorder (tests/audit/fixtures/recorder-interrupt), every misshapen variant
// refused by name; the checkpoint's name kept in its folder; --resume-arg's words.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "rundir/interrupt_state.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

using Catch::Matchers::Contains;
using ra::rundir::checkpoint_in_folder;
using ra::rundir::parse_resume_arg;
using ra::rundir::read_interrupt_state;
using ra::rundir::resume_words;

namespace {

namespace fs = std::filesystem;

const fs::path kRecorded = fs::path(REPRO_AUDIT_SOURCE_DIR) / "tests" / "audit" / "fixtures" /
                           "recorder-interrupt" / "checkpoint-step-5.recorder.json";

fs::path written(const fs::path& dir, const nlohmann::json& j) {
  const fs::path p = dir / "checkpoint-step-5.recorder.json";
  std::ofstream(p) << j.dump();
  return p;
}

}  // namespace

TEST_CASE("the recorder's own file of an interrupt is read", "[audit][interrupt]") {
  const ra::rundir::InterruptState s = read_interrupt_state(kRecorded);
  CHECK(s.interrupt_at == 5);
  CHECK(s.step == 8);  // the script's first save at or after step 5: the end of epoch 1
  CHECK(s.checkpoint_file == "checkpoint-epoch-1.pt");
}

TEST_CASE("a misshapen recorder's file is refused, naming what is wrong", "[audit][interrupt]") {
  ra::test::TempDir dir;
  const nlohmann::json real = nlohmann::json::parse(ra::test::read_text(kRecorded));
  const auto refused = [&](const char* key, const nlohmann::json& value, const char* words) {
    nlohmann::json j = real;
    if (value.is_null()) {
      j.erase(key);
    } else {
      j[key] = value;
    }
    CHECK_THROWS_WITH(read_interrupt_state(written(dir.path, j)), Contains(words));
  };
  refused("format", "something else", "not a recorder's file of an interrupt");
  refused("version", 2, "version 2; this repro-audit reads version 3");
  refused("version", nullptr, "version none");
  refused("interrupt_at", 0, "'interrupt_at': expected an integer >= 1");
  refused("step", "8", "'step': expected an integer >= 1");
  refused("step", 4, "'step' 4 is before the interrupt's step 5");
  refused("checkpoint", nlohmann::json::object({{"bytes", 3}}), "'checkpoint': expected");
  CHECK_THROWS_WITH(read_interrupt_state(dir.path / "missing.json"), Contains("cannot open"));
  fs::create_symlink(kRecorded, dir.path / "link.json");
  CHECK_THROWS_WITH(read_interrupt_state(dir.path / "link.json"), Contains("symbolic link"));
}

TEST_CASE("a checkpoint's name stays in its folder", "[audit][interrupt]") {
  ra::test::TempDir dir;
  fs::create_directories(dir.path / "sub");
  fs::create_directories(dir.path / "outside");
  std::ofstream(dir.path / "epoch-1.pt") << "x";
  std::ofstream(dir.path / "sub" / "model.pt") << "y";
  std::ofstream(dir.path / "outside" / "x.pt") << "z";
  CHECK(checkpoint_in_folder(dir.path, "epoch-1.pt") == dir.path / "epoch-1.pt");
  CHECK(checkpoint_in_folder(dir.path, "sub/model.pt") == dir.path / "sub" / "model.pt");
  const fs::path folder = dir.path / "sub";
  for (const char* name : {"../epoch-1.pt", "/etc/passwd", "./model.pt", "a//b.pt", ""}) {
    CHECK_THROWS_WITH(checkpoint_in_folder(folder, name), Contains("is not a name in the folder"));
  }
  fs::create_directory_symlink(dir.path / "outside", folder / "linked");
  CHECK_THROWS_WITH(checkpoint_in_folder(folder, "linked/x.pt"), Contains("symbolic link"));
  fs::create_symlink(dir.path / "outside" / "x.pt", folder / "latest.pt");
  CHECK_THROWS_WITH(checkpoint_in_folder(folder, "latest.pt"),
                    Contains("is a symbolic link, not a regular file"));
  CHECK_THROWS_WITH(checkpoint_in_folder(folder, "gone.pt"), Contains("missing"));
}

TEST_CASE("the words of --resume-arg, {checkpoint} put in after the split", "[audit][interrupt]") {
  CHECK(parse_resume_arg("", false).empty());
  const auto words = parse_resume_arg(" --resume  {checkpoint}\t--ckpt={checkpoint} ", true);
  CHECK(words == std::vector<std::string>{"--resume", "{checkpoint}", "--ckpt={checkpoint}"});
  CHECK(resume_words(words, "/a b/c.pt") ==
        std::vector<std::string>{"--resume", "/a b/c.pt", "--ckpt=/a b/c.pt"});
  CHECK_THROWS_WITH(parse_resume_arg("--resume", true), Contains("names no {checkpoint}"));
  CHECK_THROWS_WITH(parse_resume_arg("--resume {checkpoint}", false),
                    Contains("--resume-arg is for --interrupt-at"));
}
