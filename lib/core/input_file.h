#pragma once
// Opening a user's input file (spec, data set, trace, snapshot) for reading, refusing what is not
// a regular file. A FIFO blocks the reader until someone writes to it, /dev/zero and /dev/urandom
// never end, and a directory or a socket cannot be read at all: each would make repro-audit hang,
// fill memory, or fail with a puzzling error, so each is bad input (exit 2), named as such.
#include <cstdint>
#include <filesystem>
#include <string>

namespace ra {

// An open, read-only descriptor of a regular file. The check itself cannot hang: the file is
// opened with O_NONBLOCK (opening a FIFO without one would wait for a writer), checked with
// fstat on the descriptor that will be read (no window for a swap between check and open), and
// only then switched back to blocking reads.
// Whether a symbolic link as the last part of the path is followed (O_NOFOLLOW when not): files
// the tool itself wrote into a folder (kept outputs) are never read through a link.
enum class Links { follow, refuse };

class InputFile {
 public:
  // InputError "<path>: ..." when the file is missing or unreadable ("cannot open (reason)"), a
  // loop of symbolic links, or not a regular file ("is a FIFO (named pipe), not a regular file");
  // with Links::refuse also when it is a symbolic link ("is a symbolic link, never followed").
  explicit InputFile(const std::filesystem::path& path, Links links = Links::follow);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const noexcept { return fd_; }
  // Hands the descriptor over (to fdopen or gzdopen, which then close it).
  int release() noexcept;
  // The size stat reported when the file was opened (0 for procfs files, which are read to EOF).
  std::uint64_t size() const noexcept { return size_; }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// What a file is when it is not a regular file ("is a FIFO (named pipe)", "is a directory"), from
// its st_mode; nullptr when it is one.
const char* irregular_kind(unsigned mode);

// "16 MiB", "1 GiB", "700 bytes": sizes in the messages about size limits.
std::string byte_size_text(std::uint64_t bytes);

}  // namespace ra
