#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace ra {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(path.string() + ": " + what);
}

}  // namespace

const char* irregular_kind(unsigned mode) {
  if (S_ISREG(mode)) return nullptr;
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

namespace {

[[noreturn]] void fail_open(const std::filesystem::path& path, int error_number) {
  if (error_number == ELOOP) fail(path, "cannot open (a loop of symbolic links)");
  // open(2) of a socket fails with ENXIO, which says nothing useful; say what the file is.
  struct stat info {};
  if (error_number == ENXIO && ::stat(path.c_str(), &info) == 0) {
    if (const char* kind = irregular_kind(info.st_mode)) {
      fail(path, std::string(kind) + ", not a regular file");
    }
  }
  fail(path, std::string("cannot open (") + std::strerror(error_number) + ")");
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path, Links links) : path_(path) {
  // O_NOCTTY: a terminal named as input must not become our controlling terminal.
  const int no_follow = links == Links::refuse ? O_NOFOLLOW : 0;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | no_follow);
  if (fd_ < 0 && links == Links::refuse && errno == ELOOP) {
    fail(path_, "is a symbolic link, never followed");
  }
  if (fd_ < 0) fail_open(path_, errno);
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int e = errno;
    ::close(std::exchange(fd_, -1));
    fail(path_, std::string("cannot read (") + std::strerror(e) + ")");
  }
  if (const char* kind = irregular_kind(info.st_mode)) {
    ::close(std::exchange(fd_, -1));
    fail(path_, std::string(kind) + ", not a regular file");
  }
  size_ = info.st_size > 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
  // Regular files ignore O_NONBLOCK today, but readers must not see EAGAIN should that change.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0) (void)::close(fd_);
}

int InputFile::release() noexcept {
  return std::exchange(fd_, -1);
}

std::string byte_size_text(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  for (const auto& [unit, name] : {std::pair{kGiB, " GiB"}, {kMiB, " MiB"}, {kKiB, " KiB"}}) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + name;
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace ra
