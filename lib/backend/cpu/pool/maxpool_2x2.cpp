// The backward of the Keras max-pool (maxpool_2x2.h), shared by maxpool2d_backward and the conv
// backward that unpools its output gradient per image (conv2d_backward_maxpool).
#include <algorithm>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backend/cpu/activation.h"
#include "backend/cpu/pool/maxpool_2x2.h"
#include "core/error.h"

namespace ra::backend::cpu {
namespace {

// The offset of output i's argmax in its 2x2 window, whose top-left element has flat index
// `corner`: 0, 1, W or W + 1; anything else is an argmax no 2x2/2 forward pass wrote.
std::int64_t offset_in_window(const std::int32_t* argmax, std::int64_t i, std::int64_t corner,
                              std::int64_t W) {
  const std::int64_t offset = std::int64_t(argmax[i]) - corner;
  if (offset != 0 && offset != 1 && offset != W && offset != W + 1) {
    throw_bad_argmax(i, argmax[i]);
  }
  return offset;
}

}  // namespace

void throw_bad_argmax(std::int64_t i, std::int32_t a) {
  throw RuntimeFailure("maxpool2d_backward: argmax[" + std::to_string(i) +
                       "] = " + std::to_string(a) + " lies outside the input plane of that output");
}

// Backward of maxpool_plane_2x2 for one plane: each 2x2 block of dx is written once, the
// argmax's element = +0 + dy (the general path's add into a zeroed dx, -0 included) and the
// other three +0, row pair by row pair; rows and columns no window covers get +0. One pass of
// sequential stores instead of a fill followed by scattered adds.
void unpool_plane_2x2(const PoolGeometry& g, const float* dy, const std::int32_t* argmax,
                      const float* relu_gate, std::int64_t plane, float* dx_plane,
                      std::int64_t dx_pitch) {
  const std::int64_t W = g.w, base = plane * plane_size(g);
  const std::int64_t out_base = plane * pooled_size(g);
  for (std::int64_t p = 0; p < g.p; ++p) {
    float* __restrict__ top = dx_plane + 2 * p * dx_pitch;
    float* __restrict__ bottom = top + dx_pitch;
    const std::int64_t row_index = base + 2 * p * W;
    std::int64_t q = 0;
#if defined(__SSE2__)
    // 4 outputs at a time: the masks of the argmax's offset in its block select v into the even
    // and odd columns of both rows, interleaved into 8 consecutive floats per row.
    const __m128i lane_columns = _mm_setr_epi32(0, 2, 4, 6);
    const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1),
                                _mm_set1_epi32(static_cast<std::int32_t>(W)),
                                _mm_set1_epi32(static_cast<std::int32_t>(W + 1))};
    for (; q + 4 <= g.q; q += 4) {
      const std::int64_t i = out_base + p * g.q + q;
      __m128 v = _mm_loadu_ps(dy + i);
      if (relu_gate != nullptr) {
        v = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(relu_gate + i), _mm_setzero_ps()), v);
      }
      v = _mm_add_ps(_mm_setzero_ps(), v);
      const __m128i first =
          _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(row_index + 2 * q)), lane_columns);
      const __m128i offset =
          _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(argmax + i)), first);
      __m128 picked[4];
      __m128i any = _mm_setzero_si128();
      for (int k = 0; k < 4; ++k) {
        const __m128i hit = _mm_cmpeq_epi32(offset, offsets[k]);
        any = _mm_or_si128(any, hit);
        picked[k] = _mm_and_ps(_mm_castsi128_ps(hit), v);
      }
      if (_mm_movemask_epi8(any) != 0xFFFF) {
        for (int k = 0; k < 4; ++k) offset_in_window(argmax, i + k, row_index + 2 * (q + k), W);
      }
      _mm_storeu_ps(top + 2 * q, _mm_unpacklo_ps(picked[0], picked[1]));
      _mm_storeu_ps(top + 2 * q + 4, _mm_unpackhi_ps(picked[0], picked[1]));
      _mm_storeu_ps(bottom + 2 * q, _mm_unpacklo_ps(picked[2], picked[3]));
      _mm_storeu_ps(bottom + 2 * q + 4, _mm_unpackhi_ps(picked[2], picked[3]));
    }
#endif
    for (; q < g.q; ++q) {
      const std::int64_t i = out_base + p * g.q + q;
      const float v = 0.0f + (relu_gate == nullptr ? dy[i] : relu_backward(relu_gate[i], dy[i]));
      const std::int64_t offset = offset_in_window(argmax, i, row_index + 2 * q, W);
      top[2 * q] = offset == 0 ? v : 0.0f;
      top[2 * q + 1] = offset == 1 ? v : 0.0f;
      bottom[2 * q] = offset == W ? v : 0.0f;
      bottom[2 * q + 1] = offset == W + 1 ? v : 0.0f;
    }
    std::fill(top + 2 * g.q, top + W, 0.0f);  // an odd last column
    std::fill(bottom + 2 * g.q, bottom + W, 0.0f);
  }
  for (std::int64_t row = 2 * std::int64_t(g.p); row < g.h; ++row) {  // an odd last row
    std::fill(dx_plane + row * dx_pitch, dx_plane + row * dx_pitch + W, 0.0f);
  }
}

}  // namespace ra::backend::cpu
