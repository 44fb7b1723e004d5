#include "backend/cpu/conv/direct_conv_support.h"

#include <algorithm>

#include "backend/cpu/pool/maxpool_2x2.h"

namespace ra::backend::cpu::direct_detail {

// The zero fills here are a float or two per row (the padding columns): as memset calls, which GCC
// makes of such loops unless told not to, each would be a library call to store a float or two.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
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
        for (std::int64_t j = 0; j < dst_width; ++j) out[j] = 0.0f;
        continue;
      }
      const float* in = src + (c * height + row) * width;
      for (std::int64_t j = 0; j < j0; ++j) out[j] = 0.0f;
      // A loop rather than std::copy: rows are short (24 floats for the MNIST conv), too short to
      // pay for a memmove call per row.
      const float* from = in + (j0 - col_shift);
      for (std::int64_t j = 0; j < j1 - j0; ++j) out[j0 + j] = from[j];
      for (std::int64_t j = j1; j < dst_width; ++j) out[j] = 0.0f;
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

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))  // as shifted_copy
#endif
bool unpool_shifted(const PooledGradient& pooled, std::int64_t n, std::int64_t row_shift,
                    std::int64_t col_shift, float* dst, std::int64_t dst_height,
                    std::int64_t dst_width) {
  const std::int64_t height = pooled.g.h, width = pooled.g.w;
  if (row_shift < 0 || col_shift < 0 || row_shift + height > dst_height ||
      col_shift + width > dst_width) {
    return false;
  }
  for (std::int64_t c = 0; c < pooled.g.c; ++c) {
    float* plane = dst + c * dst_height * dst_width;
    for (std::int64_t i = 0; i < dst_height; ++i) {
      float* out = plane + i * dst_width;
      if (i < row_shift || i >= row_shift + height) {
        for (std::int64_t j = 0; j < dst_width; ++j) out[j] = 0.0f;
        continue;
      }
      for (std::int64_t j = 0; j < col_shift; ++j) out[j] = 0.0f;
      for (std::int64_t j = col_shift + width; j < dst_width; ++j) out[j] = 0.0f;
    }
    unpool_plane_2x2(pooled.g, pooled.gradient.dy, pooled.gradient.argmax,
                     pooled.gradient.relu_gate, n * pooled.g.c + c,
                     plane + row_shift * dst_width + col_shift, dst_width);
  }
  return true;
}

namespace {
std::size_t unpooled_floats(const PooledGradient& pooled) {
  return static_cast<std::size_t>(std::int64_t(pooled.g.c) * pooled.g.h * pooled.g.w);
}
}  // namespace

void reserve_unpooled(ScratchArena& scratch, const PooledGradient& pooled) {
  scratch.reserve_workers(WorkerBuffer::unpooled_gradient, unpooled_floats(pooled));
}

void add_pooled_image(PrefetchAhead& ahead, const PooledGradient& pooled, std::int64_t n) {
  const auto floats = static_cast<std::size_t>(pooled_size(pooled.g) * pooled.g.c);
  const MaxPoolGradient& u = pooled.gradient;
  ahead.add(u.dy + n * floats, floats * sizeof(float));
  ahead.add(u.argmax + n * floats, floats * sizeof(std::int32_t));
  if (u.relu_gate != nullptr) ahead.add(u.relu_gate + n * floats, floats * sizeof(float));
}

const float* unpooled_image(ScratchArena& scratch, int worker, const PooledGradient& pooled,
                            std::int64_t n) {
  float* image = scratch.worker(worker, WorkerBuffer::unpooled_gradient, unpooled_floats(pooled));
  // The unshifted copy: the image fits by construction.
  unpool_shifted(pooled, n, 0, 0, image, pooled.g.h, pooled.g.w);
  return image;
}

}  // namespace ra::backend::cpu::direct_detail
