#pragma once
// The column matrix of one image, which turns convolution into GEMM:
//   col[(c*R + r)*S + s, p*Q + q] = x[c, p*stride_h - pad_top + r, q*stride_w - pad_left + s]
// (zero where that position falls into the padding). Its shape is [C*R*S, P*Q].
#include <cstdint>

#include "backend/geometry.h"

namespace ra::backend::cpu {

inline std::int64_t col_rows(const ConvGeometry& g) {
  return std::int64_t(g.c) * g.r * g.s;
}
inline std::int64_t col_cols(const ConvGeometry& g) {
  return std::int64_t(g.p) * g.q;
}

// A 1x1 kernel with stride 1 and no padding: the column matrix IS the image ([C, H*W]).
bool im2col_is_identity(const ConvGeometry& g);

// col = im2col(x_image); x_image is [C, H, W].
void im2col(const ConvGeometry& g, const float* x_image, float* col);

// dx_image = 0, then dx_image[position of col[row, pos]] += col[row, pos] for row ascending, pos
// ascending (a fixed order, so the overlapping sums of a stride < kernel conv are deterministic).
void col2im(const ConvGeometry& g, const float* col, float* dx_image);

// col2im restricted to the kernel taps r * S + s in [tap_begin, tap_end): dx_image = 0, then the
// col rows (c, r, s) of those taps only, in the same order. Summing the col2im_taps of a partition
// of [0, R*S) gives col2im up to rounding (the order of the partial sums differs).
void col2im_taps(const ConvGeometry& g, const float* col, std::int64_t tap_begin,
                 std::int64_t tap_end, float* dx_image);

}  // namespace ra::backend::cpu
