// The command log as a bounded ring (core/log_ring.h): at most its capacity on disk, the last of
// the output kept, a first line saying what was dropped; never opened through a link or a FIFO.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/log_ring.h"
#include "support/temp_dir.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a short output is kept as it is", "[core][log]") {
  ra::test::TempDir dir;
  const auto log = dir.path / "command.log";
  ra::LogRing ring(log, 100);
  ring.write("hello\n");
  ring.finish();
  CHECK(read_text(log) == "hello\n");
  CHECK(ring.dropped() == 0);
}

TEST_CASE("a long output keeps its last half to whole capacity", "[core][log]") {
  ra::test::TempDir dir;
  const auto log = dir.path / "command.log";
  ra::LogRing ring(log, 100);
  std::string all;
  for (int i = 0; i < 100; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    all += line;
    ring.write(line);
    // Never more than the capacity on disk while it runs.
    std::error_code ec;
    const auto older = std::filesystem::file_size(dir.path / "command.log.1", ec);
    CHECK((ec ? 0 : older) + std::filesystem::file_size(log) <= 100);
  }
  ring.finish();
  const std::string text = read_text(log);
  CHECK_THAT(text, StartsWith("[repro-audit: the first " + std::to_string(ring.dropped()) +
                              " bytes of the output were dropped"));
  const std::string kept = text.substr(text.find('\n') + 1);
  CHECK(kept.size() >= 50);
  CHECK(kept.size() <= 100);
  CHECK_THAT(all, EndsWith(kept));
  CHECK(ring.dropped() + kept.size() == all.size());
  CHECK_FALSE(std::filesystem::exists(dir.path / "command.log.1"));
}

TEST_CASE("the log is never written through a link or into a FIFO", "[core][log]") {
  ra::test::TempDir dir;
  const auto target = dir.path / "elsewhere";
  std::ofstream(target) << "keep";
  std::filesystem::create_symlink(target, dir.path / "command.log");
  CHECK_THROWS_AS(ra::LogRing(dir.path / "command.log", 100), ra::RuntimeFailure);
  CHECK(read_text(target) == "keep");
  REQUIRE(::mkfifo((dir.path / "fifo.log").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ra::LogRing(dir.path / "fifo.log", 100), Contains("fifo.log"));
}
