#pragma once
// A fresh folder under the system's temporary directory, removed with everything in it when the
// object goes; for tests that write traces, snapshots or files of their own.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace ra::test {

struct TempDir {
  std::filesystem::path path;

  // mkdtemp: unique across the processes CTest runs at once, and never an existing folder.
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ra-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace ra::test
