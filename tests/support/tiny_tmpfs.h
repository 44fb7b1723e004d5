#pragma once
// A small tmpfs mounted at a folder: a real full disk for the tests of what a full disk does.
// Needs root and permission to mount (CAP_SYS_ADMIN); `mounted` says whether it is there, and a
// test without it WARNs and returns. Unmounted when it goes.
#include <sys/mount.h>

#include <filesystem>
#include <string>

namespace ra::test {

struct TinyTmpfs {
  std::filesystem::path path;
  bool mounted = false;
  // `size` as mount(8) takes it: "64k", "1m".
  TinyTmpfs(const std::filesystem::path& where, const std::string& size) : path(where) {
    std::filesystem::create_directories(path);
    mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  TinyTmpfs(const TinyTmpfs&) = delete;
  TinyTmpfs& operator=(const TinyTmpfs&) = delete;
  ~TinyTmpfs() {
    if (mounted) ::umount(path.c_str());
  }
};

}  // namespace ra::test
