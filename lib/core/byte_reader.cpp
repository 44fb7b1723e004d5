#include "core/byte_reader.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/input_file.h"

namespace ra {
namespace {

// zlib's own input buffer (default 8 KiB). 256 KiB makes gzread issue ~100 read() calls for the
// 26 MB Fashion-MNIST training images instead of ~3200.
constexpr unsigned kGzipBufferBytes = 256u * 1024u;
// gzread takes an unsigned count and returns an int: stay well inside both.
constexpr std::size_t kMaxGzipCall = std::size_t{1} << 30;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

}  // namespace

struct ByteReader::Source {
  std::FILE* raw = nullptr;
  gzFile gz = nullptr;
  ~Source() {
    if (raw) std::fclose(raw);
    if (gz) gzclose(gz);
  }
};

ByteReader::ByteReader(std::string path) : path_(std::move(path)), source_(new Source) {
  // Refuses directories, FIFOs and devices (/dev/zero would inflate forever) before any read.
  InputFile file(path_);
  file_bytes_ = file.size();
  unsigned char magic[2] = {0, 0};
  ssize_t got = 0;
  do {
    got = ::pread(file.fd(), magic, 2, 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) fail(path_, std::string("cannot read (") + std::strerror(errno) + ")");
  // The stream takes over the checked descriptor (at offset 0): no second open by name.
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    source_->gz = gzdopen(file.fd(), "rb");
    if (!source_->gz) fail(path_, "cannot open as gzip");
    file.release();
    gzbuffer(source_->gz, kGzipBufferBytes);
  } else {
    source_->raw = ::fdopen(file.fd(), "rb");
    if (!source_->raw) fail(path_, std::string("cannot open (") + std::strerror(errno) + ")");
    file.release();
  }
}

ByteReader::~ByteReader() = default;

bool ByteReader::compressed() const noexcept {
  return source_->gz != nullptr;
}

std::size_t ByteReader::read(void* out, std::size_t size) {
  auto* dst = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  if (source_->raw) {
    while (done < size) {
      const std::size_t n = std::fread(dst + done, 1, size - done, source_->raw);
      done += n;
      if (n == 0) break;
    }
    if (std::ferror(source_->raw)) fail(path_, std::string("read error: ") + std::strerror(errno));
    return done;
  }
  while (done < size) {
    const std::size_t want = std::min(size - done, kMaxGzipCall);
    const int n = gzread(source_->gz, dst + done, static_cast<unsigned>(want));
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  // A short read is either the clean end of the stream or an error that zlib only records: a
  // stream cut off before its trailer makes gzread return what it had with Z_BUF_ERROR set.
  int errnum = Z_OK;
  const char* message = gzerror(source_->gz, &errnum);
  if (errnum == Z_BUF_ERROR) fail(path_, "gzip stream is truncated (unexpected end of file)");
  if (errnum != Z_OK) {
    fail(path_, std::string("corrupt gzip stream: ") + (message ? message : "unknown error"));
  }
  return done;
}

}  // namespace ra
