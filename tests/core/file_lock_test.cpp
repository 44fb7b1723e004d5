// Advisory file locks: exclusive keeps out every other holder, shared keeps out exclusive ones
// only, the last holder removes the file, holder() says who holds it, and a probe never makes a
// start fail. flock locks belong to open file descriptions, so two locks taken in one process
// conflict exactly as two processes' would.
#include "core/file_lock.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/error.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using ra::FileLock;

TEST_CASE("an exclusive lock keeps out exclusive and shared holders until released", "[lock]") {
  ra::test::TempDir dir;
  const fs::path path = dir.path / "x.lock";
  {
    std::optional<FileLock> first = FileLock::try_lock(path, FileLock::Mode::exclusive, "pid 7\n");
    REQUIRE(first);
    CHECK_FALSE(FileLock::try_lock(path, FileLock::Mode::exclusive));
    CHECK_FALSE(FileLock::try_lock(path, FileLock::Mode::shared));
    CHECK(FileLock::holder(path) == std::optional<std::string>("pid 7\n"));
  }
  // Released and removed: no file, no holder, free to take.
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(FileLock::holder(path));
  CHECK(FileLock::try_lock(path, FileLock::Mode::exclusive));
}

TEST_CASE("shared locks coexist, keep out an exclusive one, and the last one out removes the file",
          "[lock]") {
  ra::test::TempDir dir;
  const fs::path path = dir.path / "folder.lock";
  std::optional<FileLock> a = FileLock::try_lock(path, FileLock::Mode::shared);
  std::optional<FileLock> b = FileLock::try_lock(path, FileLock::Mode::shared);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(FileLock::try_lock(path, FileLock::Mode::exclusive));
  CHECK(FileLock::holder(path) == std::optional<std::string>(""));  // shared holders say nothing
  a.reset();
  CHECK(fs::exists(path));  // b still holds it
  CHECK_FALSE(FileLock::try_lock(path, FileLock::Mode::exclusive));
  b.reset();
  CHECK_FALSE(fs::exists(path));
  CHECK(FileLock::try_lock(path, FileLock::Mode::exclusive));
}

TEST_CASE("a lock moved to another owner is released once", "[lock]") {
  ra::test::TempDir dir;
  const fs::path path = dir.path / "m.lock";
  std::optional<FileLock> first = FileLock::try_lock(path, FileLock::Mode::exclusive, "1");
  REQUIRE(first);
  FileLock moved = std::move(*first);
  first.reset();  // the moved-from object releases nothing
  CHECK_FALSE(FileLock::try_lock(path, FileLock::Mode::shared));
  CHECK(moved.path() == path);
}

TEST_CASE("a probe of a lock does not make a start fail", "[lock]") {
  ra::test::TempDir dir;
  const fs::path path = dir.path / "p.lock";
  // Probes take the lock for microseconds, over and over, while a holder tries to start.
  std::atomic<bool> stop{false};
  std::thread prober([&] {
    while (!stop) (void)FileLock::holder(path);
  });
  for (int i = 0; i < 50; ++i) {
    std::optional<FileLock> lock = FileLock::try_lock(path, FileLock::Mode::shared);
    CHECK(lock);
  }
  stop = true;
  prober.join();
}

TEST_CASE("a lock file in a missing folder is a clear input error", "[lock]") {
  ra::test::TempDir dir;
  CHECK_THROWS_WITH(FileLock::try_lock(dir.path / "no" / "such.lock", FileLock::Mode::exclusive),
                    Catch::Contains("cannot open lock file") && Catch::Contains("such.lock"));
  CHECK_THROWS_AS(FileLock::try_lock(dir.path / "no" / "such.lock", FileLock::Mode::shared),
                  ra::InputError);
}
