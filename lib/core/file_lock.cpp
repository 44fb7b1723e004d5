#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/input_file.h"

namespace ra {
namespace {

// Tries of a lock held by someone else before saying so: long enough to outlast a probe.
constexpr int kBusyTries = 20;
constexpr auto kBusyPause = std::chrono::milliseconds(25);
// Tries of a lock file that keeps being replaced under its name.
constexpr int kReplacedTries = 100;

// The locked descriptor still names the file under `path`.
bool still_named(int fd, const std::filesystem::path& path) {
  struct stat locked {
  }, named{};
  return ::fstat(fd, &locked) == 0 && ::stat(path.c_str(), &named) == 0 &&
         locked.st_dev == named.st_dev && locked.st_ino == named.st_ino;
}

// Opens a lock file without ever blocking or following a link (O_NONBLOCK: opening a FIFO would
// wait for a writer that never comes) and checks it is a regular file: InputError naming it
// otherwise. -1 with errno set when open(2) fails.
int open_lock_file(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  if (fd < 0) return -1;
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const char* kind = irregular_kind(info.st_mode);
    ::close(fd);
    throw InputError("lock file " + path.string() + " " + (kind ? kind : "cannot be examined") +
                     ", not a regular file: not a lock repro-audit made; move it away");
  }
  return fd;
}

}  // namespace

std::optional<FileLock> FileLock::try_lock(const std::filesystem::path& path, Mode mode,
                                           std::string_view note) {
  const int operation = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  int busy = 0;
  for (int attempt = 0; attempt < kReplacedTries + kBusyTries; ++attempt) {
    const int fd = open_lock_file(path, O_RDWR | O_CREAT);
    if (fd < 0) {
      const int e = errno;
      if (e == ELOOP) {
        throw InputError("lock file " + path.string() +
                         " is a symbolic link, not a regular file: not a lock repro-audit made; "
                         "move it away");
      }
      throw InputError("cannot open lock file " + path.string() + ": " + std::strerror(e));
    }
    if (::flock(fd, operation) != 0) {
      const int e = errno;
      ::close(fd);
      if (e != EWOULDBLOCK && e != EINTR) {
        throw RuntimeFailure("cannot lock " + path.string() + ": " + std::strerror(e));
      }
      if (++busy >= kBusyTries) return std::nullopt;
      std::this_thread::sleep_for(kBusyPause);
      continue;
    }
    if (!still_named(fd, path)) {  // removed or replaced by its last holder meanwhile: again
      ::close(fd);
      continue;
    }
    if (mode == Mode::exclusive) {
      const std::string text(note);
      if (::ftruncate(fd, 0) == 0) (void)!::write(fd, text.data(), text.size());
    }
    return FileLock(path, fd, mode);
  }
  throw RuntimeFailure("cannot lock " + path.string() + ": it keeps being replaced");
}

std::optional<std::string> FileLock::holder(const std::filesystem::path& path) {
  const int fd = open_lock_file(path, O_RDONLY);
  if (fd < 0) {
    if (errno == ELOOP) {
      throw InputError("lock file " + path.string() +
                       " is a symbolic link, not a regular file: not a lock repro-audit made");
    }
    return std::nullopt;
  }
  std::optional<std::string> note;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char text[256] = {};
    const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
    note = got > 0 ? std::string(text, static_cast<std::size_t>(got)) : std::string();
  }
  ::close(fd);
  return note;
}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), mode_(other.mode_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    mode_ = other.mode_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  release();
}

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  // Removed while held exclusively: whoever opened it meanwhile sees the name gone and retries.
  // A shared holder removes it only as the last one out (the exclusive try fails while others
  // hold it; converting drops our shared lock first, which is what releasing does anyway).
  if (mode_ == Mode::exclusive || ::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    if (still_named(fd_, path_)) (void)::unlink(path_.c_str());
  }
  (void)::close(fd_);
  fd_ = -1;
}

}  // namespace ra
