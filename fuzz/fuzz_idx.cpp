// IDX bytes -> read_idx, raw and gzip-compressed. read_idx takes a path (zlib's gzopen reads the
// file itself), so each input is put in an anonymous in-memory file (memfd) and read through
// /proc/self/fd/N: nothing touches the disk and nothing is left behind.
//
// Inputs that start with the gzip magic are read as they are (mutated gzip streams: the seed
// corpus holds .gz files). Every other input is also gzip-compressed here and read again: the two
// readings must agree, the same array or both refused, since the reader decides by content alone.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/idx.h"
#include "fuzz_support.h"

namespace {

// An anonymous file holding `bytes`, closed on destruction.
class MemoryFile {
 public:
  explicit MemoryFile(const std::uint8_t* bytes, std::size_t size)
      : fd_(memfd_create("fuzz-idx", MFD_CLOEXEC)) {
    if (fd_ < 0) ra::fuzz::fail("memfd_create failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = write(fd_, bytes + done, size - done);
      if (n <= 0) ra::fuzz::fail("write to the memfd failed");
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

std::vector<std::uint8_t> gzip(const std::uint8_t* bytes, std::size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper (header and CRC-32 trailer), as gzip(1) writes.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    ra::fuzz::fail("deflateInit2 failed");
  }
  std::vector<std::uint8_t> out(deflateBound(&z, size) + 32);
  z.next_in = const_cast<std::uint8_t*>(bytes);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) ra::fuzz::fail("deflate did not finish");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The array, or nothing when read_idx refused the file.
bool read(const std::uint8_t* bytes, std::size_t size, ra::data::IdxArray& array) {
  const MemoryFile file(bytes, size);
  return ra::fuzz::accepts([&] { array = ra::data::read_idx(file.path()); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ra::data::IdxArray as_given;
  const bool accepted = read(data, size, as_given);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0;

  const std::vector<std::uint8_t> compressed = gzip(data, size);
  ra::data::IdxArray inflated;
  const bool accepted_compressed = read(compressed.data(), compressed.size(), inflated);
  ra::fuzz::require(accepted == accepted_compressed,
                    "raw and gzip-compressed copies of one file are not both accepted or refused");
  if (accepted) {
    ra::fuzz::require(inflated.dims == as_given.dims && inflated.bytes == as_given.bytes,
                      "raw and gzip-compressed copies of one file read differently");
  }
  return 0;
}
