// The blocked transpositions of simd/transpose.h: every one the element-by-element copy, edges
// (rows and columns past whole blocks) and destination strides wider than the rows included.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "backend/cpu/simd/isa.h"
#include "backend/cpu/simd/transpose.h"
#include "backend_test_util.h"

namespace {

struct TransposeShape {
  std::int64_t rows = 0, cols = 0, src_stride = 0, dst_stride = 0;
};

// The Keras ResNet29v2 filter gradient's output gradients (64 x 1024 into lanes of 64, 128 x 64
// into 128), and shapes whose edges fill no whole 8 x 8 or 4 x 4 block.
std::vector<TransposeShape> shapes() {
  return {{64, 1024, 1024, 64}, {128, 64, 64, 128}, {16, 24, 24, 16}, {13, 37, 40, 21},
          {7, 5, 5, 9},         {1, 1, 1, 1},       {24, 8, 11, 30}};
}

template <class Transpose>
void require_transposes(const Transpose& transpose) {
  for (const TransposeShape& s : shapes()) {
    INFO(s.rows << " x " << s.cols << ", strides " << s.src_stride << " and " << s.dst_stride);
    const std::vector<float> src =
        test::random_values(static_cast<std::size_t>(s.rows * s.src_stride), 91);
    // Floats of the destination no element lands on keep their value.
    std::vector<float> expected(static_cast<std::size_t>(s.cols * s.dst_stride), -7.0f);
    for (std::int64_t r = 0; r < s.rows; ++r) {
      for (std::int64_t c = 0; c < s.cols; ++c) {
        expected[c * s.dst_stride + r] = src[r * s.src_stride + c];
      }
    }
    std::vector<float> dst(expected.size(), -7.0f);
    transpose(src.data(), s.src_stride, s.rows, s.cols, dst.data(), s.dst_stride);
    REQUIRE(test::same_bits(dst, expected));
  }
}

}  // namespace

TEST_CASE("transpose_into copies every element to its transposed place", "[backend][transpose]") {
  require_transposes(ra::backend::cpu::transpose_into);
}

TEST_CASE("transpose_into_avx2 copies what transpose_into copies", "[backend][transpose]") {
  if (!ra::backend::cpu::isa_supported(ra::backend::cpu::Isa::avx2_fma)) {
    SUCCEED("this CPU has no AVX2");
    return;
  }
  require_transposes(ra::backend::cpu::transpose_into_avx2);
}
