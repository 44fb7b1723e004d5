#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/directory.h"
#include "core/error.h"
#include "core/input_file.h"

namespace ra {
namespace {

// Errno to simulate per IoStep (0: none); see detail::InjectedIoFailure.
std::array<std::atomic<int>, 3> g_injected_errno{};

int injected(detail::IoStep step) {
  return g_injected_errno[static_cast<std::size_t>(step)].load(std::memory_order_relaxed);
}

std::string reason(int error_number) {
  // "disk full" is what a user searches for; strerror's "No space left on device" follows it.
  std::string text = std::strerror(error_number);
  if (error_number == ENOSPC) return "disk full (" + text + ")";
  return text;
}

// A missing folder, a read-only one or one without permission is a path the user gave (exit code
// 2, like any bad input); a full disk or quota, and other I/O errors, are failures of the machine
// the run met (exit code 3), as exec's run whose recorder cannot write is (issue 61: run exited 2
// on a full disk where exec exited 3).
[[noreturn]] void throw_write_error(const std::string& message, int error_number) {
  switch (error_number) {
    case EACCES:
    case EPERM:
    case EROFS:
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
      throw InputError(message);
    default:
      throw RuntimeFailure(message);
  }
}

// Unique per process and per writer: two writers in one process (threads) or two processes
// (shards of an audit writing into one folder) never share a temporary file.
std::filesystem::path temporary_for(const std::filesystem::path& path) {
  static std::atomic<unsigned long long> counter{0};
  const unsigned long long n = counter.fetch_add(1, std::memory_order_relaxed);
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(static_cast<long long>(::getpid())) + "-" + std::to_string(n);
  return tmp;
}

// Makes the rename itself durable (the directory entry is data of the folder). Best effort: the
// file is complete under its final name by now, so a failure here is not worth failing the write.
void sync_folder(int dir_fd, const std::filesystem::path& path) noexcept {
  if (dir_fd != AT_FDCWD) {
    (void)::fsync(dir_fd);
    return;
  }
  std::filesystem::path folder = path.parent_path();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  (void)::close(fd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path)
    : path_(std::move(path)),
      temporary_(temporary_for(path_)),
      dir_fd_(AT_FDCWD),
      target_name_(path_.string()),
      temporary_name_(temporary_.string()) {
  create_temporary();
}

AtomicFileWriter::AtomicFileWriter(const Directory& folder, const std::string& name)
    : path_(folder.path() / name), temporary_(temporary_for(path_)), dir_fd_(-1) {
  target_name_ = name;
  temporary_name_ = temporary_.filename().string();
  dir_fd_ = ::fcntl(folder.fd(), F_DUPFD_CLOEXEC, 0);
  if (dir_fd_ < 0) {
    const int e = errno;
    finished_ = true;
    throw_write_error("cannot write " + path_.string() + ": " + reason(e), e);
  }
  create_temporary();
}

void AtomicFileWriter::create_temporary() {
  // O_EXCL: never write into a file that someone else created under our temporary name (nor
  // through a link under it: O_EXCL does not follow one).
  fd_ = ::openat(dir_fd_, temporary_name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int e = errno;
    finished_ = true;
    if (dir_fd_ != AT_FDCWD) (void)::close(std::exchange(dir_fd_, AT_FDCWD));
    throw_write_error("cannot write " + path_.string() + ": cannot create temporary file " +
                          temporary_.string() + ": " + reason(e),
                      e);
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!finished_) discard();
  if (dir_fd_ != AT_FDCWD && dir_fd_ >= 0) (void)::close(dir_fd_);
}

void AtomicFileWriter::append(std::string_view bytes) {
  if (finished_) throw std::logic_error("AtomicFileWriter::append after commit or failure");
  if (buffer_.size() + bytes.size() > kBufferBytes) write_buffer();
  if (bytes.size() >= kBufferBytes) {
    // Large pieces (a whole snapshot) go straight to the file: no copy through the buffer.
    write_all(bytes.data(), bytes.size());
  } else {
    buffer_.append(bytes);
  }
}

void AtomicFileWriter::flush() {
  if (finished_) throw std::logic_error("AtomicFileWriter::flush after commit or failure");
  write_buffer();
}

void AtomicFileWriter::keep_partial() noexcept {
  if (finished_) return;
  finished_ = true;
  std::size_t done = 0;
  while (done < buffer_.size()) {  // best effort: a failing write ends it, the file stays
    const ssize_t written = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) break;
    done += static_cast<std::size_t>(written);
  }
  buffer_.clear();
  (void)::close(std::exchange(fd_, -1));
}

void AtomicFileWriter::write_buffer() {
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::write_all(const char* data, std::size_t left) {
  while (left > 0) {
    if (const int e = injected(detail::IoStep::write)) fail("write", e);
    const ssize_t written = ::write(fd_, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    // A short write is not an error by itself (signals, quotas); the next call reports why.
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

void AtomicFileWriter::flush_and_close() {
  write_buffer();
  // fsync before rename: otherwise a crash right after the rename may leave the final name
  // pointing at a file whose data never reached the disk (zero length on ext4 with delalloc).
  if (const int e = injected(detail::IoStep::fsync)) fail("fsync", e);
  if (::fsync(fd_) != 0) fail("fsync", errno);
  // close can report deferred write errors (NFS), so it is checked too.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("close", errno);
}

void AtomicFileWriter::commit() {
  if (finished_) throw std::logic_error("AtomicFileWriter::commit after commit or failure");
  flush_and_close();
  if (const int e = injected(detail::IoStep::rename)) fail("rename", e);
  if (::renameat(dir_fd_, temporary_name_.c_str(), dir_fd_, target_name_.c_str()) != 0) {
    fail("rename", errno);
  }
  finished_ = true;
  sync_folder(dir_fd_, path_);
}

bool AtomicFileWriter::commit_new() {
  if (finished_) throw std::logic_error("AtomicFileWriter::commit_new after commit or failure");
  flush_and_close();
  if (const int e = injected(detail::IoStep::rename)) fail("link", e);
  bool created = ::linkat(dir_fd_, temporary_name_.c_str(), dir_fd_, target_name_.c_str(), 0) == 0;
  if (!created) {
    const int e = errno;
    // Over NFS a link whose reply was lost is retried and answers EEXIST although it was ours:
    // the temporary file then has two names.
    struct stat st {};
    created = ::fstatat(dir_fd_, temporary_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
              st.st_nlink == 2;
    if (!created && e != EEXIST) fail("link", e);
  }
  discard();  // the temporary name (the file lives on under `path` when created)
  if (created) sync_folder(dir_fd_, path_);
  return created;
}

void AtomicFileWriter::fail(const std::string& what, int error_number) {
  discard();
  throw_write_error(
      "cannot write " + path_.string() + ": " + what + " failed: " + reason(error_number),
      error_number);
}

void AtomicFileWriter::discard() noexcept {
  finished_ = true;
  if (fd_ >= 0) (void)::close(std::exchange(fd_, -1));
  (void)::unlinkat(dir_fd_, temporary_name_.c_str(), 0);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.append(bytes);
  writer.commit();
}

void write_file_atomic(const Directory& folder, const std::string& name, std::string_view bytes) {
  AtomicFileWriter writer(folder, name);
  writer.append(bytes);
  writer.commit();
}

std::string read_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                      std::string_view kind, Links links) {
  InputFile file(path, links);
  const auto too_large = [&] {
    return InputError(path.string() + ": larger than " + byte_size_text(max_bytes) +
                      ", the limit for " + std::string(kind));
  };
  if (file.size() > max_bytes) throw too_large();
  std::string bytes;
  // st_size is a hint (0 for /proc files); read until end of file either way, and stop one byte
  // past the cap, so that a file growing while it is read cannot slip past it.
  bytes.reserve(static_cast<std::size_t>(file.size()));
  std::array<char, 1 << 16> chunk;
  for (;;) {
    const ssize_t got = ::read(file.fd(), chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputError(path.string() + ": cannot read (" + std::strerror(errno) + ")");
    }
    if (got == 0) break;
    bytes.append(chunk.data(), static_cast<std::size_t>(got));
    if (bytes.size() > max_bytes) throw too_large();
  }
  return bytes;
}

namespace detail {

InjectedIoFailure::InjectedIoFailure(IoStep step, int error_number)
    : step_(step),
      previous_(g_injected_errno[static_cast<std::size_t>(step)].exchange(error_number)) {}

InjectedIoFailure::~InjectedIoFailure() {
  g_injected_errno[static_cast<std::size_t>(step_)].store(previous_);
}

}  // namespace detail

}  // namespace ra
