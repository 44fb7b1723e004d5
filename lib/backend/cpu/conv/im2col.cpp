#include "backend/cpu/conv/im2col.h"

#include <algorithm>

#include "core/integer_math.h"

namespace ra::backend::cpu {
namespace {

// The output columns q whose input column q*stride_w - pad_left + s lies inside [0, W):
// q in [begin, end). Outside that range the tap reads padding.
struct ValidRange {
  std::int64_t begin, end;
};

ValidRange valid_outputs(std::int64_t offset, std::int64_t stride, std::int64_t extent,
                         std::int64_t outputs) {
  // input = q * stride + offset; need 0 <= input < extent.
  const std::int64_t begin = offset >= 0 ? 0 : ceil_div(-offset, stride);
  const std::int64_t end = extent - offset <= 0 ? 0 : ceil_div(extent - offset, stride);
  const std::int64_t b = std::min(begin, outputs);
  return {b, std::max(b, std::min(end, outputs))};
}

}  // namespace

bool im2col_is_identity(const ConvGeometry& g) {
  return g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.p == g.h && g.q == g.w;
}

void im2col(const ConvGeometry& g, const float* x_image, float* col) {
  const std::int64_t P = g.p, Q = g.q, H = g.h, W = g.w;
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* plane = x_image + c * H * W;
    for (std::int64_t r = 0; r < g.r; ++r) {
      const ValidRange rows = valid_outputs(r - g.pad_top, g.stride_h, H, P);
      for (std::int64_t s = 0; s < g.s; ++s) {
        const ValidRange cols = valid_outputs(s - g.pad_left, g.stride_w, W, Q);
        float* out = col + ((c * g.r + r) * g.s + s) * P * Q;
        std::fill(out, out + rows.begin * Q, 0.0f);
        for (std::int64_t p = rows.begin; p < rows.end; ++p) {
          // Input row of output row p; input column of output column q is q * stride_w + shift.
          const float* in = plane + (p * g.stride_h + r - g.pad_top) * W;
          const std::int64_t shift = s - g.pad_left;
          float* o = out + p * Q;
          std::fill(o, o + cols.begin, 0.0f);
          if (g.stride_w == 1) {
            std::copy(in + cols.begin + shift, in + cols.end + shift, o + cols.begin);
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q) o[q] = in[q * g.stride_w + shift];
          }
          std::fill(o + cols.end, o + Q, 0.0f);
        }
        std::fill(out + rows.end * Q, out + P * Q, 0.0f);
      }
    }
  }
}

void col2im(const ConvGeometry& g, const float* col, float* dx_image) {
  col2im_taps(g, col, 0, std::int64_t(g.r) * g.s, dx_image);
}

void col2im_taps(const ConvGeometry& g, const float* col, std::int64_t tap_begin,
                 std::int64_t tap_end, float* dx_image) {
  // Gathered by dx row rather than scattered by col row: dx row (c, h) receives the col rows
  // (c, r, s) at output row p with p * stride_h + r - pad_top == h. Every dx element still gets
  // its terms in (r, s) ascending order starting from 0 -- the order of the scatter over col rows
  // ascending in im2col.h, so the same bits -- but the row is summed while it sits in L1 and
  // written once, with no zero-fill pass over the image first.
  const std::int64_t P = g.p, Q = g.q, H = g.h, W = g.w, RS = std::int64_t(g.r) * g.s;
  for (std::int64_t c = 0; c < g.c; ++c) {
    for (std::int64_t h = 0; h < H; ++h) {
      float* __restrict__ row = dx_image + (c * H + h) * W;
      std::fill_n(row, W, 0.0f);
      for (std::int64_t r = 0; r < g.r; ++r) {
        const std::int64_t t = h + g.pad_top - r;  // = p * stride_h
        if (t < 0 || t % g.stride_h != 0 || t / g.stride_h >= P) continue;
        const std::int64_t p = t / g.stride_h;
        for (std::int64_t s = 0; s < g.s; ++s) {
          const std::int64_t tap = r * g.s + s;
          if (tap < tap_begin || tap >= tap_end) continue;
          const ValidRange cols = valid_outputs(s - g.pad_left, g.stride_w, W, Q);
          const float* __restrict__ in = col + ((c * RS + r * g.s + s) * P + p) * Q;
          const std::int64_t shift = s - g.pad_left;
          if (g.stride_w == 1) {
            // Contiguous: a vectorisable row add.
            float* __restrict__ dst = row + cols.begin + shift;
            const float* __restrict__ src = in + cols.begin;
            for (std::int64_t q = 0; q < cols.end - cols.begin; ++q) dst[q] += src[q];
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q)
              row[q * g.stride_w + shift] += in[q];
          }
        }
      }
    }
  }
}

}  // namespace ra::backend::cpu
