#pragma once
// Requests for the next image's inputs, spread over this image's tiles.
//
// A convolution works image by image, and each image starts by copying or unpooling its inputs: the
// conv input (86 KB per MNIST conv2 image), or the pooled gradient, its argmax and gate (three
// planes of 36 KB). Those come from L3 or memory, and a copy that meets them cold stalls on every
// line: each of the two passes that unpool the pooled gradient (128 x 64 x 12 x 12 floats, 4.7 MB
// per step) would then run at memory speed. While image n's tiles run (compute-bound), the next
// image's lines are requested into L2, a few after each tile; all at once, the requests would stall
// the tiles instead (each miss holds one of the core's few line fill buffers). Requests only:
// nothing is read or written, so no result depends on them.
#include <cstddef>
#include <cstdint>
#include "core/integer_math.h"

namespace ra::backend::cpu {

class PrefetchAhead {
 public:
  static constexpr int kMaxRanges = 4;

  // Adds the lines of bytes [data, data + bytes); nothing for null data, no bytes, or once
  // kMaxRanges ranges are held (a request dropped costs time, never a result).
  void add(const void* data, std::size_t bytes) {
    if (data == nullptr || bytes == 0 || count_ == kMaxRanges) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(data) & ~std::uintptr_t(kLine - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(data) + bytes;
    ranges_[count_++] = {begin, ceil_div(end - begin, kLine)};
  }
  // Spreads the lines added so far evenly over `steps` calls of step().
  void spread(std::int64_t steps) {
    std::size_t lines = 0;
    for (int r = 0; r < count_; ++r) lines += ranges_[r].lines;
    per_step_ = steps > 0 ? (lines + static_cast<std::size_t>(steps) - 1) / steps : lines;
  }
  // The lines added and not yet requested.
  std::size_t lines_left() const {
    std::size_t lines = 0;
    for (int r = range_; r < count_; ++r) lines += ranges_[r].lines;
    return lines - line_;
  }
  // Requests the next slice of lines into L2.
  void step() {
    for (std::size_t left = per_step_; left > 0 && range_ < count_; --left) {
      const Range& r = ranges_[range_];
      __builtin_prefetch(reinterpret_cast<const void*>(r.begin + line_ * kLine), 0, 2);
      if (++line_ == r.lines) {
        line_ = 0;
        ++range_;
      }
    }
  }

 private:
  static constexpr std::size_t kLine = 64;
  struct Range {
    std::uintptr_t begin = 0;  // line-aligned
    std::size_t lines = 0;
  };
  Range ranges_[kMaxRanges];
  int count_ = 0, range_ = 0;
  std::size_t line_ = 0, per_step_ = 0;
};

}  // namespace ra::backend::cpu
