#pragma once
// Whole-file reads and all-or-nothing writes. Traces, snapshots and reports are read by other
// processes (a CI job, a `compare` running beside an audit, a user's script), so a reader must
// never see a half-written file under its final name: data goes to a temporary file in the same
// folder, is flushed and fsync'ed, and only then renamed over the final name (rename(2) within
// one file system is atomic). A crash or a full disk leaves the old file, or none, never a torso.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/input_file.h"

namespace ra {

class Directory;  // core/directory.h

// Writes `bytes` to `path` atomically. On any failure the temporary file is removed and
// ra::InputError is thrown for what the user can fix (disk full, missing or read-only folder,
// permissions: exit code 2) and ra::RuntimeFailure for other I/O errors, naming `path` and the
// reason.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);
// The same for the file `name` of `folder`, relative to its descriptor.
void write_file_atomic(const Directory& folder, const std::string& name, std::string_view bytes);

// Streaming variant: append() as often as needed, then commit(). Without a commit (an exception
// on the way, an early return) the destructor removes the temporary file and `path` is untouched.
// The temporary file is "<path>.tmp-<pid>-<n>": unique per process and per writer, so concurrent
// writers of the same path do not clobber each other's temporaries (the last commit wins).
class AtomicFileWriter {
 public:
  // Creates the temporary file; throws (as above) naming `path` if it cannot (e.g. missing folder).
  explicit AtomicFileWriter(std::filesystem::path path);
  // The file `name` of `folder` (core/directory.h): created, written and renamed relative to the
  // folder's descriptor (its own duplicate), so a folder swapped for a link meanwhile still gets
  // the file, and nothing lands outside it.
  AtomicFileWriter(const Directory& folder, const std::string& name);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // noexcept; removes the temporary file if not committed

  // Buffered: bytes reach the file in chunks of kBufferBytes (or at commit). A write error
  // discards the temporary file and throws (as above); the writer is then finished.
  void append(std::string_view bytes);
  // Flush, fsync, close, rename over `path`. Throws as above (temporary file removed).
  // Calling append() or commit() after commit (or after a failure) is a std::logic_error.
  void commit();
  // Like commit(), but only when nothing is under `path` yet: link(2), which fails when the name
  // exists, where commit() renames over it. Returns false (and `path` is untouched) when the name
  // was taken, so of writers racing to create one file exactly one gets true.
  bool commit_new();
  // Writes what the buffer holds to the temporary file (no fsync): a reader of the temporary
  // (a diagnosis of an interrupted run) then sees every piece appended so far.
  void flush();
  // Ends the writer without a commit and leaves the temporary file, flushed as far as writing
  // allows, for diagnosis (a streamed trace of a run that did not end well): debris that an audit
  // folder names as a partial file and `--resume` removes. noexcept; later calls do nothing.
  void keep_partial() noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::filesystem::path& temporary_path() const noexcept { return temporary_; }

  // Small pieces (trace lines of ~100 bytes) are gathered into 1 MiB write(2) calls; a piece of
  // 1 MiB or more (a whole snapshot) is written directly, without a copy.
  static constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

 private:
  void write_buffer();                                 // writes and clears buffer_
  void flush_and_close();                              // buffer out, fsync, close; fail() on error
  void write_all(const char* data, std::size_t size);  // write(2) until done; fail() on error
  [[noreturn]] void fail(const std::string& what, int error_number);  // discard + throw
  void discard() noexcept;  // close and unlink the temporary file

  void create_temporary();  // the constructors' common part

  std::filesystem::path path_;       // for messages: the folder's path and the name
  std::filesystem::path temporary_;  // likewise
  // Where the names below resolve: the folder's descriptor (a duplicate this writer owns), or
  // AT_FDCWD for a writer made from a path (then they are the paths above).
  int dir_fd_;
  std::string target_name_, temporary_name_;
  std::string buffer_;
  int fd_ = -1;
  bool finished_ = false;  // committed, or failed and discarded
};

// Files read whole are capped, so that a mistaken argument (a 50 GB disk image) fails at once
// with a message instead of exhausting memory. 4 GiB is above any snapshot of a model this tool
// trains; callers that know their file kind pass a tighter cap (spec 16 MiB, trace 1 GiB).
inline constexpr std::uint64_t kMaxReadFileBytes = std::uint64_t{4} << 30;

// Reads a whole regular file (see InputFile: directories, FIFOs, devices and sockets are refused
// without blocking). ra::InputError "<path>: ..." if it is missing, unreadable, not a regular file,
// or larger than `max_bytes` ("larger than 16 MiB, the limit for a spec file", `kind` naming it).
std::string read_file(const std::filesystem::path& path,
                      std::uint64_t max_bytes = kMaxReadFileBytes,
                      std::string_view kind = "a file read whole", Links links = Links::follow);

namespace detail {

// Test seam, not for production code: while an InjectedIoFailure is alive, every `step` that an
// AtomicFileWriter performs fails with `error_number` as if the system call had returned it. This
// is how tests show the error path of a full disk (ENOSPC at write) or a failing fsync (EIO)
// without needing a full file system. Not thread-safe against concurrent writers in other threads.
enum class IoStep { write, fsync, rename };

class InjectedIoFailure {
 public:
  InjectedIoFailure(IoStep step, int error_number);
  InjectedIoFailure(const InjectedIoFailure&) = delete;
  InjectedIoFailure& operator=(const InjectedIoFailure&) = delete;
  ~InjectedIoFailure();

 private:
  IoStep step_;
  int previous_;
};

}  // namespace detail

}  // namespace ra
