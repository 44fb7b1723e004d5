#include "core/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/input_file.h"

namespace ra {
namespace {

[[noreturn]] void fail(const std::filesystem::path& where, const std::string& what, int e) {
  const std::string message = where.string() + ": " + what + " (" + std::strerror(e) + ")";
  if (e == EIO) throw RuntimeFailure(message);
  throw InputError(message);
}

std::string refusal(const std::filesystem::path& path, const std::string& what,
                    const char* expected) {
  return path.string() + " is " + what + ", not " + expected +
         ": repro-audit never follows or replaces a link or a file of another kind in a folder "
         "it manages; move it away";
}

}  // namespace

Directory Directory::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open the folder", errno);
  return Directory(path, fd);
}

Directory::Directory(Directory&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

Directory& Directory::operator=(Directory&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) (void)::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Directory::~Directory() {
  if (fd_ >= 0) (void)::close(fd_);
}

Directory::Kind Directory::kind(const std::string& name) const {
  struct stat info {};
  if (::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Kind::absent;
    fail(path_ / name, "cannot look at it", errno);
  }
  if (S_ISLNK(info.st_mode)) return Kind::link;
  if (S_ISDIR(info.st_mode)) return Kind::folder;
  if (S_ISREG(info.st_mode)) return Kind::file;
  return Kind::other;
}

std::string Directory::describe(const std::string& name) const {
  struct stat info {};
  if (::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return "missing";
  if (S_ISLNK(info.st_mode)) return "a symbolic link";
  if (S_ISDIR(info.st_mode)) return "a folder";
  if (const char* kind = irregular_kind(info.st_mode)) {
    return std::string(kind).substr(3);  // "is a FIFO (named pipe)" -> "a FIFO (named pipe)"
  }
  return "a regular file";
}

std::vector<std::string> Directory::names() const {
  // fdopendir takes the descriptor it is given: a duplicate, so this object keeps its own.
  const int copy = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) fail(path_, "cannot read the folder", errno);
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    const int e = errno;
    (void)::close(copy);
    fail(path_, "cannot read the folder", e);
  }
  std::vector<std::string> out;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  const int e = errno;
  (void)::closedir(dir);
  if (e != 0) fail(path_, "cannot read the folder", e);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<Directory> Directory::subfolder(const std::string& name, bool create) const {
  if (create && ::mkdirat(fd_, name.c_str(), 0777) != 0 && errno != EEXIST) {
    fail(path_ / name, "cannot create the folder", errno);
  }
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return Directory(path_ / name, fd);
  const int e = errno;
  if (e == ENOENT) return std::nullopt;
  if (e == ELOOP || e == ENOTDIR) {
    throw InputError(refusal(path_ / name, describe(name), "a folder"));
  }
  fail(path_ / name, "cannot open the folder", e);
}

void Directory::remove_file(const std::string& name) const {
  const Kind k = kind(name);
  if (k == Kind::absent) return;
  if (k != Kind::file) throw InputError(refusal(path_ / name, describe(name), "a regular file"));
  if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT) {
    fail(path_ / name, "cannot remove it", errno);
  }
}

bool Directory::remove_empty_folder(const std::string& name) const {
  if (kind(name) != Kind::folder) return false;
  return ::unlinkat(fd_, name.c_str(), AT_REMOVEDIR) == 0;
}

void Directory::remove_tree(const std::string& name, int max_depth) const {
  const std::optional<Directory> folder = subfolder(name, false);  // never a link's target
  if (!folder) return;
  for (const std::string& entry : folder->names()) {
    const Kind k = folder->kind(entry);
    if (k == Kind::folder) {
      if (max_depth <= 1) {
        throw InputError((folder->path_ / entry).string() +
                         ": nested deeper than repro-audit removes a folder it manages; remove "
                         "it yourself");
      }
      folder->remove_tree(entry, max_depth - 1);
    } else if (k != Kind::absent && ::unlinkat(folder->fd_, entry.c_str(), 0) != 0 &&
               errno != ENOENT) {
      fail(folder->path_ / entry, "cannot remove it", errno);
    }
  }
  if (::unlinkat(fd_, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    fail(path_ / name, "cannot remove the folder", errno);
  }
}

}  // namespace ra
