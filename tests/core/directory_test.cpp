// core/directory.h: a folder touched only through its descriptor, never through a link; and
// atomic writes relative to it (core/atomic_file.h).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/atomic_file.h"
#include "core/directory.h"
#include "core/error.h"
#include "support/temp_dir.h"

using Catch::Matchers::Contains;
using ra::Directory;

namespace {

namespace fs = std::filesystem;

std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST_CASE("a folder's entries by kind, links never followed", "[core][directory]") {
  ra::test::TempDir tmp;
  fs::create_directories(tmp.path / "sub");
  std::ofstream(tmp.path / "file") << "x";
  fs::create_directory_symlink(tmp.path / "sub", tmp.path / "link-to-folder");
  fs::create_symlink(tmp.path / "file", tmp.path / "link-to-file");
  REQUIRE(::mkfifo((tmp.path / "fifo").c_str(), 0600) == 0);
  const Directory d = Directory::open(tmp.path);
  CHECK(d.kind("file") == Directory::Kind::file);
  CHECK(d.kind("sub") == Directory::Kind::folder);
  CHECK(d.kind("link-to-folder") == Directory::Kind::link);
  CHECK(d.kind("link-to-file") == Directory::Kind::link);
  CHECK(d.kind("fifo") == Directory::Kind::other);
  CHECK(d.kind("none") == Directory::Kind::absent);
  CHECK(d.describe("fifo") == "a FIFO (named pipe)");
  CHECK(d.describe("link-to-folder") == "a symbolic link");
  CHECK(d.names() ==
        std::vector<std::string>{"fifo", "file", "link-to-file", "link-to-folder", "sub"});
  // A subfolder through a link, a link or a FIFO removed as a file: refused, naming it.
  CHECK_THROWS_WITH(d.subfolder("link-to-folder", false),
                    Contains("link-to-folder is a symbolic link, not a folder"));
  CHECK_THROWS_WITH(d.subfolder("file", true), Contains("file is a regular file, not a folder"));
  CHECK_THROWS_AS(d.remove_file("link-to-file"), ra::InputError);
  CHECK_THROWS_AS(d.remove_file("fifo"), ra::InputError);
  CHECK_THROWS_AS(d.remove_file("sub"), ra::InputError);
  CHECK(fs::exists(tmp.path / "file"));  // the links' target is untouched
  d.remove_file("file");
  d.remove_file("file");  // absent: nothing to do
  CHECK_FALSE(fs::exists(tmp.path / "file"));
  // Subfolders: made, found, removed only when empty.
  CHECK_FALSE(d.subfolder("new", false));
  REQUIRE(d.subfolder("new", true));
  std::ofstream(tmp.path / "sub" / "x") << "x";
  CHECK_FALSE(d.remove_empty_folder("sub"));
  CHECK(d.remove_empty_folder("new"));
  CHECK_FALSE(d.remove_empty_folder("link-to-folder"));
  CHECK(fs::exists(tmp.path / "sub" / "x"));
  CHECK_THROWS_AS(Directory::open(tmp.path / "missing"), ra::InputError);
}

TEST_CASE("atomic writes relative to a folder stay in it when its path is swapped for a link",
          "[core][directory]") {
  ra::test::TempDir tmp;
  fs::create_directories(tmp.path / "run");
  fs::create_directories(tmp.path / "elsewhere");
  const Directory run = *Directory::open(tmp.path).subfolder("run", false);
  ra::write_file_atomic(run, "a.txt", "first");
  CHECK(text_of(tmp.path / "run" / "a.txt") == "first");
  // The folder moved away and a link to another folder put in its place, between writes: the
  // writes go on into the folder opened, never through the link.
  fs::rename(tmp.path / "run", tmp.path / "moved");
  fs::create_directory_symlink(tmp.path / "elsewhere", tmp.path / "run");
  ra::AtomicFileWriter writer(run, "b.txt");
  writer.append("second");
  writer.commit();
  CHECK(text_of(tmp.path / "moved" / "b.txt") == "second");
  CHECK(fs::is_empty(tmp.path / "elsewhere"));
  // An uncommitted writer leaves nothing behind; a name that is a link is replaced, not followed.
  { ra::AtomicFileWriter discarded(run, "c.txt"); }
  std::ofstream(tmp.path / "elsewhere" / "target") << "theirs";
  fs::create_symlink(tmp.path / "elsewhere" / "target", tmp.path / "moved" / "d.txt");
  ra::write_file_atomic(run, "d.txt", "mine");
  CHECK(text_of(tmp.path / "elsewhere" / "target") == "theirs");
  CHECK_FALSE(fs::is_symlink(tmp.path / "moved" / "d.txt"));
  CHECK(text_of(tmp.path / "moved" / "d.txt") == "mine");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path / "moved"))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"a.txt", "b.txt", "d.txt"});
}

TEST_CASE("a tree is removed whole, its links as links, never what they name",
          "[core][directory]") {
  ra::test::TempDir tmp;
  fs::create_directories(tmp.path / "tree" / "a" / "b");
  fs::create_directories(tmp.path / "outside");
  std::ofstream(tmp.path / "outside" / "keep") << "k";
  std::ofstream(tmp.path / "tree" / "x.pt") << "x";
  std::ofstream(tmp.path / "tree" / "a" / "b" / "y.pt") << "y";
  fs::create_directory_symlink(tmp.path / "outside", tmp.path / "tree" / "a" / "to-outside");
  fs::create_symlink(tmp.path / "outside" / "keep", tmp.path / "tree" / "latest.pt");
  const Directory d = Directory::open(tmp.path);
  d.remove_tree("tree");
  CHECK(d.kind("tree") == Directory::Kind::absent);
  CHECK(text_of(tmp.path / "outside" / "keep") == "k");
  d.remove_tree("tree");  // absent: nothing
  fs::create_directory_symlink(tmp.path / "outside", tmp.path / "link");
  CHECK_THROWS_WITH(d.remove_tree("link"), Contains("a symbolic link, not a folder"));
  CHECK(text_of(tmp.path / "outside" / "keep") == "k");
  fs::create_directories(tmp.path / "deep" / "1" / "2");
  CHECK_THROWS_WITH(d.remove_tree("deep", 2), Contains("nested deeper than repro-audit removes"));
}
