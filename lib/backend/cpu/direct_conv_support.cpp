#include "backend/cpu/direct_conv_support.h"

#include <algorithm>

namespace ra::backend::cpu::direct_detail {

void shifted_copy(const float* src, std::int64_t channels, std::int64_t height, std::int64_t width,
                  std::int64_t row_shift, std::int64_t col_shift, float* dst,
                  std::int64_t dst_height, std::int64_t dst_width) {
  const std::int64_t j0 = std::clamp<std::int64_t>(col_shift, 0, dst_width);
  const std::int64_t j1 = std::clamp<std::int64_t>(col_shift + width, j0, dst_width);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t i = 0; i < dst_height; ++i) {
      float* out = dst + (c * dst_height + i) * dst_width;
      const std::int64_t row = i - row_shift;
      if (row < 0 || row >= height) {
        std::fill_n(out, dst_width, 0.0f);
        continue;
      }
      const float* in = src + (c * height + row) * width;
      std::fill(out, out + j0, 0.0f);
      // A loop rather than std::copy: rows are short (24 floats for the MNIST conv), and a
      // memmove call per row cost 7% of the backward data convolution.
      const float* from = in + (j0 - col_shift);
      for (std::int64_t j = 0; j < j1 - j0; ++j) out[j0 + j] = from[j];
      std::fill(out + j1, out + dst_width, 0.0f);
    }
  }
}

void fill_tap_offsets(const ConvGeometry& g, const Source& source, std::int64_t* offsets) {
  for (std::int64_t c = 0; c < g.c; ++c) {
    for (std::int64_t r = 0; r < g.r; ++r) {
      for (std::int64_t s = 0; s < g.s; ++s) {
        offsets[(c * g.r + r) * g.s + s] = (c * source.height + r) * source.width + s;
      }
    }
  }
}

}  // namespace ra::backend::cpu::direct_detail
