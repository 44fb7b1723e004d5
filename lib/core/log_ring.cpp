#include "core/log_ring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace ra {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& path, const char* what) {
  throw RuntimeFailure("cannot " + std::string(what) + " the command log " + path.string() + ": " +
                       std::strerror(errno));
}

int open_log(const fs::path& path, int flags) {
  return ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
}

void write_all(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, "write");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string read_all(const fs::path& path) {
  const int fd = open_log(path, O_RDONLY);
  if (fd < 0) fail(path, "read");
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail(path, "read");
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

fs::path older_half(const fs::path& path) {
  return fs::path(path.string() + ".1");
}

}  // namespace

LogRing::LogRing(fs::path path, std::size_t capacity)
    : path_(std::move(path)), half_(capacity / 2 > 0 ? capacity / 2 : 1) {
  std::error_code ec;
  fs::remove(older_half(path_), ec);  // a killed run's; not this run's output
  open_current();
}

LogRing::~LogRing() {
  if (fd_ >= 0) ::close(fd_);
}

void LogRing::open_current() {
  fd_ = open_log(path_, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd_ < 0) fail(path_, "create");
  // Non-blocking was for the open only (a FIFO under the name must not hang it): a regular file.
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    errno = EINVAL;
    fail(path_, "use a non-regular file as");
  }
  current_ = 0;
}

void LogRing::rotate() {
  ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  if (rotated_) dropped_ += fs::file_size(older_half(path_), ec);
  fs::rename(path_, older_half(path_), ec);
  if (ec) fail(path_, "rotate");
  rotated_ = true;
  open_current();
}

void LogRing::write(std::string_view bytes) {
  while (!bytes.empty()) {
    if (current_ >= half_) rotate();
    const std::size_t n = std::min(bytes.size(), half_ - current_);
    write_all(fd_, bytes.substr(0, n), path_);
    current_ += n;
    bytes.remove_prefix(n);
  }
}

void LogRing::finish() {
  if (finished_) return;
  finished_ = true;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!rotated_) return;
  const fs::path older = older_half(path_);
  std::string joined = read_all(older) + read_all(path_);
  const std::string note = "[repro-audit: the first " + std::to_string(dropped_) +
                           " bytes of the output were dropped: the log keeps the last " +
                           std::to_string(joined.size()) + "]\n";
  // Named as an atomic write's temporary: debris an audit folder knows, should this be killed.
  const fs::path temporary(path_.string() + ".tmp-" + std::to_string(::getpid()) + "-0");
  const int fd = open_log(temporary, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0) fail(temporary, "create");
  write_all(fd, note, temporary);
  write_all(fd, joined, temporary);
  ::close(fd);
  std::error_code ec;
  fs::rename(temporary, path_, ec);
  if (ec) fail(path_, "replace");
  fs::remove(older, ec);
}

}  // namespace ra
