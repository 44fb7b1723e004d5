// Input files: what is not a regular file (FIFO, device, directory, socket, symlink loop) is an
// InputError naming the file and what it is, found without blocking; files read whole are capped.
#include "core/input_file.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text_excerpt.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using ra::test::TempDir;

std::string open_error(const fs::path& path) {
  try {
    ra::InputFile file(path);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("opened " << path);
  return {};
}

}  // namespace

TEST_CASE("InputFile opens regular files and refuses every other kind", "[input_file]") {
  TempDir dir;
  const fs::path regular = dir.path / "spec.json";
  std::ofstream(regular) << "{}";
  {
    ra::InputFile file(regular);
    CHECK(file.fd() >= 0);
    CHECK(file.size() == 2);
  }

  SECTION("a FIFO without a writer: refused at once, not waited on") {
    const fs::path fifo = dir.path / "spec.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto start = std::chrono::steady_clock::now();
    CHECK(open_error(fifo) == fifo.string() + ": is a FIFO (named pipe), not a regular file");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  }
  SECTION("devices: /dev/zero never ends, /dev/null is no file either") {
    CHECK(open_error("/dev/zero") == "/dev/zero: is a character device, not a regular file");
    CHECK_THAT(open_error("/dev/null"), StartsWith("/dev/null: is a character device"));
  }
  SECTION("a directory") {
    CHECK(open_error(dir.path) == dir.path.string() + ": is a directory, not a regular file");
  }
  SECTION("a symbolic link loop, and a link to a FIFO") {
    const fs::path a = dir.path / "a", b = dir.path / "b";
    fs::create_symlink(b, a);
    fs::create_symlink(a, b);
    CHECK(open_error(a) == a.string() + ": cannot open (a loop of symbolic links)");
    const fs::path fifo = dir.path / "f", link = dir.path / "link";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_symlink(fifo, link);
    CHECK_THAT(open_error(link), Contains("is a FIFO"));
    // A link to a regular file is fine.
    fs::create_symlink(regular, dir.path / "ok");
    CHECK_NOTHROW(ra::InputFile(dir.path / "ok"));
  }
  SECTION("a socket") {
    const fs::path socket_path = dir.path / "s.sock";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    CHECK(open_error(socket_path) == socket_path.string() + ": is a socket, not a regular file");
    ::close(fd);
  }
  SECTION("missing and unreadable files say why") {
    CHECK(open_error(dir.path / "none") ==
          (dir.path / "none").string() + ": cannot open (No such file or directory)");
  }
}

TEST_CASE("read_file refuses what is not a regular file and what is over its cap", "[input_file]") {
  TempDir dir;
  const fs::path fifo = dir.path / "trace.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ra::read_file(fifo), Contains("is a FIFO"));
  CHECK_THROWS_WITH(ra::read_file("/dev/zero"), Contains("is a character device"));

  const fs::path file = dir.path / "big";
  ra::write_file_atomic(file, std::string(1025, 'x'));
  CHECK(ra::read_file(file, 1025).size() == 1025);
  CHECK_THROWS_WITH(ra::read_file(file, 1024, "a test file"),
                    file.string() + ": larger than 1 KiB, the limit for a test file");
  CHECK_THROWS_AS(ra::read_file(file, 1024), ra::InputError);
}

TEST_CASE("byte sizes read as people write them", "[input_file]") {
  CHECK(ra::byte_size_text(16u << 20) == "16 MiB");
  CHECK(ra::byte_size_text(std::uint64_t{1} << 30) == "1 GiB");
  CHECK(ra::byte_size_text(1024) == "1 KiB");
  CHECK(ra::byte_size_text(1000) == "1000 bytes");
}

TEST_CASE("excerpts keep messages short and name the full length", "[input_file]") {
  CHECK(ra::excerpt("short") == "short");
  CHECK(ra::excerpt(std::string(64, 'a')) == std::string(64, 'a'));
  CHECK(ra::excerpt(std::string(65, 'a')) == std::string(64, 'a') + "... (65 bytes)");
  CHECK(ra::excerpt(std::string(5 << 20, 'a')).size() < 90);
  // Never cut inside a UTF-8 character: 63 'a' and a 2-byte 'é' keep 63 bytes.
  const std::string text = std::string(63, 'a') + "\xC3\xA9" + "tail";
  CHECK(ra::excerpt(text) == std::string(63, 'a') + "... (69 bytes)");
  CHECK(ra::quoted_excerpt("key") == "'key'");
  CHECK(ra::quoted_excerpt(std::string(70, 'k'), '"') ==
        "\"" + std::string(64, 'k') + "...\" (70 bytes)");
}
