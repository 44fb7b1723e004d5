#pragma once
// The output of a command a run executes, kept on disk as a bounded ring: the log holds at most
// `capacity` bytes, the last of what the command printed (docs/pytorch.md "Running it": 4 MiB).
// Bytes go to `path` until it holds half the capacity; it then becomes `path`.1 (replacing the
// older half) and a new `path` starts, so at no time do the two hold more than the capacity.
// finish() joins them into `path`: a first line saying how many earlier bytes were dropped, then
// the last half to whole capacity of the output. A name that is not a regular file (a link, a
// FIFO) is never opened.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace ra {

inline constexpr std::size_t kCommandLogBytes = std::size_t{4} << 20;

class LogRing {
 public:
  LogRing(std::filesystem::path path, std::size_t capacity = kCommandLogBytes);
  ~LogRing();
  LogRing(const LogRing&) = delete;
  LogRing& operator=(const LogRing&) = delete;

  // Appends `bytes`; RuntimeFailure naming the file when it cannot be written.
  void write(std::string_view bytes);
  // Joins the halves into `path` (idempotent); RuntimeFailure when it cannot.
  void finish();

  std::uint64_t dropped() const { return dropped_; }  // bytes of output no longer kept

 private:
  void open_current();
  void rotate();

  std::filesystem::path path_;
  std::size_t half_;
  int fd_ = -1;
  std::size_t current_ = 0;  // bytes in `path`
  bool rotated_ = false;     // `path`.1 holds the older half
  std::uint64_t dropped_ = 0;
  bool finished_ = false;
};

}  // namespace ra
