#pragma once
// Advisory locks on a lock file (flock(2)), taken without waiting: one owner per lock, held for
// as long as the object lives, dropped by the kernel when the owner dies (kill -9 included), so a
// killed process never leaves a lock behind. Exclusive locks keep out every other holder; shared
// locks keep out exclusive ones only (the shards of one audit share their folder's lock, which a
// second audit cannot then take).
//
// The lock file is removed by its last holder. A lock only counts when the file locked is still
// the one under the name (another holder may remove it between our open and our flock), so
// taking a lock retries on a replaced or removed file. Someone probing a lock (holder()) holds it
// for microseconds; taking a lock retries for about half a second before it says the lock is held,
// so a probe never makes a start fail.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ra {

class FileLock {
 public:
  enum class Mode { exclusive, shared };

  // The lock on `path` (created when missing), or none when another process holds it in a
  // conflicting mode. An exclusive holder writes `note` into the file (what holder() returns).
  // InputError naming the file when it cannot be opened (a missing or read-only folder),
  // RuntimeFailure for other errors.
  static std::optional<FileLock> try_lock(const std::filesystem::path& path, Mode mode,
                                          std::string_view note = {});

  // What the holder of `path`'s lock wrote into it ("" from shared holders), or none when no
  // process holds it (or there is no such file).
  static std::optional<std::string> holder(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Removes the file when no one else holds it (a shared holder checks by taking it exclusively,
  // without waiting), then releases the lock.
  ~FileLock();

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  FileLock(std::filesystem::path path, int fd, Mode mode)
      : path_(std::move(path)), fd_(fd), mode_(mode) {}
  void release() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  Mode mode_ = Mode::exclusive;
};

}  // namespace ra
