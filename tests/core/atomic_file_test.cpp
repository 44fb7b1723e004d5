// All-or-nothing writes: content round-trips, an uncommitted or failed write leaves neither the
// final file nor a temporary one, errors name the path and the reason.
#include "core/atomic_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <random>
#include <string>

#include "core/error.h"
#include "support/tiny_tmpfs.h"

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp folder, removed with everything in it.
struct FileTestDir {
  fs::path path;
  FileTestDir() {
    path = fs::temp_directory_path() /
           ("ra_atomic_file_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~FileTestDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  // Names of everything in the folder (to show that no temporary file is left behind).
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path))
      names.push_back(e.path().filename().string());
    return names;
  }
};

std::string binary_blob(std::size_t n) {
  std::mt19937 gen(12345);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen() & 0xFF);
  return s;
}

}  // namespace

TEST_CASE("write_file_atomic round-trips text, binary and empty content", "[atomic_file]") {
  FileTestDir dir;
  const fs::path file = dir.path / "out.bin";
  // Larger than the writer's buffer, with every byte value, including NULs.
  const std::string blob = binary_blob(ra::AtomicFileWriter::kBufferBytes * 2 + 77);
  ra::write_file_atomic(file, blob);
  CHECK(fs::file_size(file) == blob.size());
  CHECK(ra::read_file(file) == blob);

  // Overwrite replaces the whole content (not a prefix of the old one).
  ra::write_file_atomic(file, "short");
  CHECK(ra::read_file(file) == "short");
  ra::write_file_atomic(file, "");
  CHECK(ra::read_file(file).empty());
  CHECK(dir.entries() == std::vector<std::string>{"out.bin"});
}

TEST_CASE("AtomicFileWriter streams pieces and publishes only on commit", "[atomic_file]") {
  FileTestDir dir;
  const fs::path file = dir.path / "trace.jsonl";
  const std::string big = binary_blob(ra::AtomicFileWriter::kBufferBytes + 5);
  {
    ra::AtomicFileWriter w(file);
    w.append("line 1\n");
    w.append(big);  // bigger than the buffer: written directly, after the buffered line
    w.append("line 3\n");
    CHECK_FALSE(fs::exists(file));  // not visible under the final name before commit
    CHECK(fs::exists(w.temporary_path()));
    CHECK(w.temporary_path().parent_path() == dir.path);  // same folder, so rename is atomic
    CHECK(w.temporary_path().filename().string().rfind(
              "trace.jsonl.tmp-" + std::to_string(::getpid()) + "-", 0) == 0);
    w.commit();
    CHECK_THROWS_AS(w.append("x"), std::logic_error);
    CHECK_THROWS_AS(w.commit(), std::logic_error);
  }
  CHECK(ra::read_file(file) == "line 1\n" + big + "line 3\n");
  CHECK(dir.entries() == std::vector<std::string>{"trace.jsonl"});
}

TEST_CASE("a writer destroyed without commit leaves no file and no temporary", "[atomic_file]") {
  FileTestDir dir;
  const fs::path file = dir.path / "snapshot.safetensors";
  SECTION("no previous file") {
    {
      ra::AtomicFileWriter w(file);
      w.append(binary_blob(3 * ra::AtomicFileWriter::kBufferBytes));  // some of it reached disk
    }
    CHECK(dir.entries().empty());
  }
  SECTION("a previous file is left exactly as it was") {
    ra::write_file_atomic(file, "old content");
    {
      ra::AtomicFileWriter w(file);
      w.append("new content that never commits");
    }
    CHECK(ra::read_file(file) == "old content");
    CHECK(dir.entries() == std::vector<std::string>{"snapshot.safetensors"});
  }
}

TEST_CASE("writing into a missing folder is an input error naming it", "[atomic_file]") {
  FileTestDir dir;
  const fs::path file = dir.path / "no-such-folder" / "out.json";
  try {
    ra::write_file_atomic(file, "{}");
    FAIL("expected InputError");
  } catch (const ra::InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(file.string()) != std::string::npos);
    CHECK(what.find("No such file or directory") != std::string::npos);
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("I/O failures discard the temporary file and name path and reason", "[atomic_file]") {
  FileTestDir dir;
  const fs::path file = dir.path / "report.json";
  ra::write_file_atomic(file, "previous");

  // A permission problem is the user's to fix (InputError, exit 2); a full disk or an I/O error
  // of the device is a runtime failure (exit 3).
  struct Case {
    ra::detail::IoStep step;
    int error_number;
    std::string expected;
    bool input_error;
  };
  const Case cases[] = {
      {ra::detail::IoStep::write, ENOSPC, "write failed: disk full (No space left on device)",
       false},
      {ra::detail::IoStep::fsync, EIO, "fsync failed: Input/output error", false},
      {ra::detail::IoStep::rename, EACCES, "rename failed: Permission denied", true},
  };
  for (const Case& c : cases) {
    INFO(c.expected);
    ra::detail::InjectedIoFailure failure(c.step, c.error_number);
    try {
      ra::write_file_atomic(file, "new content");
      FAIL("expected an exception");
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      CHECK(what.find(file.string()) != std::string::npos);
      CHECK(what.find(c.expected) != std::string::npos);
      CHECK((dynamic_cast<const ra::InputError*>(&e) != nullptr) == c.input_error);
      CHECK((dynamic_cast<const ra::RuntimeFailure*>(&e) != nullptr) == !c.input_error);
    }
    CHECK(ra::read_file(file) == "previous");  // the old file survives every failure
    CHECK(dir.entries() == std::vector<std::string>{"report.json"});
  }
  // The injection ends with its scope.
  ra::write_file_atomic(file, "new content");
  CHECK(ra::read_file(file) == "new content");
}

TEST_CASE("a really full disk (64 KiB tmpfs) fails cleanly", "[atomic_file]") {
  FileTestDir dir;
  ra::test::TinyTmpfs disk(dir.path / "tiny", "64k");
  if (!disk.mounted) {
    WARN(
        "cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): the full-disk path is covered "
        "only by the injected ENOSPC of the test above");
    return;
  }
  const fs::path file = disk.path / "big.bin";
  try {
    ra::write_file_atomic(file, binary_blob(256 * 1024));  // 4x the disk
    FAIL("expected RuntimeFailure");
  } catch (const ra::RuntimeFailure& e) {
    CHECK(std::string(e.what()).find("disk full") != std::string::npos);
  }
  CHECK(fs::is_empty(disk.path));  // no partial file, no temporary
  // The space was given back: a small file fits afterwards.
  ra::write_file_atomic(file, "fits");
  CHECK(ra::read_file(file) == "fits");
}

TEST_CASE("read_file names the path when it cannot read", "[atomic_file]") {
  FileTestDir dir;
  const fs::path missing = dir.path / "missing.trace.jsonl";
  CHECK_THROWS_WITH(ra::read_file(missing),
                    Catch::Contains(missing.string()) && Catch::Contains("No such file"));
  CHECK_THROWS_AS(ra::read_file(missing), ra::InputError);
  CHECK_THROWS_WITH(ra::read_file(dir.path),
                    Catch::Contains(dir.path.string()) && Catch::Contains("is a directory"));
  // Files whose size stat() does not know (procfs reports 0) are still read to the end.
  CHECK(ra::read_file("/proc/self/status").find("Pid:") != std::string::npos);
}
