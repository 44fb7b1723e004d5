// kernels::dense_weight_grad_fixed on a device against its host twin (splitk_fixed_twin.h): the
// same bits, on every call, for the slice counts of the plan and others (1: no scratch, no pass 2).
// Tagged [gpu]: skips with the reason when no usable GPU is present.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>
#include "backend_cuda/gpu_test_support.h"

#include "backend_cuda/splitk_fixed_twin.h"
#include "kernels/reduction_split.h"
#include "kernels/splitk_gemm.cuh"

namespace {

// Device bytes, filled with 0xFF (NaN for floats) so that an output the kernel forgot shows up.
class SplitkDeviceBytes {
 public:
  SplitkDeviceBytes(const gpu_test::Stream& stream, std::size_t bytes)
      : bytes_(bytes == 0 ? 1 : bytes) {
    RA_TEST_CUDA(cudaMalloc(&data_, bytes_));
    stream.fill_bytes(data_, 0xFF, bytes_);
  }
  ~SplitkDeviceBytes() { cudaFree(data_); }
  SplitkDeviceBytes(const SplitkDeviceBytes&) = delete;
  SplitkDeviceBytes& operator=(const SplitkDeviceBytes&) = delete;
  float* floats() const { return static_cast<float*>(data_); }

 private:
  std::size_t bytes_;
  void* data_ = nullptr;
};

using splitk_twin::values;

}  // namespace

TEST_CASE("dense_weight_grad_fixed gives its host twin's bits on every call", "[gpu][kernels]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  gpu_test::Stream stream;
  struct Shape {
    int n, in, out;
  };
  // A batch-128 gradient with partial tiles on both sides, and a small odd one.
  for (const Shape& shape : {Shape{128, 300, 70}, Shape{37, 19, 5}}) {
    const std::vector<float> x = values(std::size_t(shape.n) * shape.in, 1);
    const std::vector<float> dy = values(std::size_t(shape.n) * shape.out, 2);
    const std::size_t outputs = std::size_t(shape.out) * shape.in;
    SplitkDeviceBytes d_x(stream, x.size() * 4), d_dy(stream, dy.size() * 4),
        d_dw(stream, outputs * 4);
    stream.upload(d_x.floats(), x.data(), x.size() * 4);
    stream.upload(d_dy.floats(), dy.data(), dy.size() * 4);
    const int planned = ra::kernels::gemm_fixed_slices(shape.out, shape.in, shape.n);
    for (const int slices : {planned, 1, 3, 8}) {
      INFO("n " << shape.n << " in " << shape.in << " out " << shape.out << ", " << slices
                << " slices");
      const std::vector<float> want =
          splitk_twin::dense_weight_grad_fixed(shape.n, shape.in, shape.out, x, dy, slices);
      SplitkDeviceBytes scratch(stream, ra::kernels::dense_weight_grad_fixed_workspace_bytes(
                                            shape.in, shape.out, slices));
      for (int call = 0; call < 3; ++call) {
        stream.fill_bytes(d_dw.floats(), 0xFF, outputs * 4);
        ra::kernels::dense_weight_grad_fixed(stream.get(), shape.n, shape.in, shape.out,
                                             d_x.floats(), d_dy.floats(), d_dw.floats(), slices,
                                             scratch.floats());
        std::vector<float> got(outputs);
        stream.download(got.data(), d_dw.floats(), outputs * 4);
        REQUIRE(std::memcmp(got.data(), want.data(), outputs * 4) == 0);
      }
    }
  }
}
