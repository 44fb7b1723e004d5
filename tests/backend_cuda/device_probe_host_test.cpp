// The kernel-image check of query_device (backend/cuda/device.h) without a GPU: the reason given
// for a device this build has no kernel code for names the device, its compute capability, the
// architectures the build was compiled for, the failing probe and how to rebuild; and the build
// knows its architectures (CMAKE_CUDA_ARCHITECTURES, passed by lib/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <string>

#include "backend/cuda/device.h"
#include "support/text_lines.h"

namespace {

using namespace ra::backend::cuda;
using ra::test::contains;

}  // namespace

TEST_CASE("a device without kernel code in this build: the reason says which and why",
          "[cuda][host]") {
  const std::string reason =
      no_kernel_image_reason("NVIDIA B200", 10, 0, "80,90", "cudaErrorNoKernelImageForDevice");
  CHECK(reason ==
        "NVIDIA B200 (compute capability 10.0) cannot run this build's kernels: built for CUDA "
        "architectures 80,90 (cudaFuncGetAttributes on a probe kernel: "
        "cudaErrorNoKernelImageForDevice); rebuild with -DCMAKE_CUDA_ARCHITECTURES=100");
  CHECK(contains(no_kernel_image_reason("Tesla V100", 7, 5, "80", "cudaErrorInvalidDeviceFunction"),
                 "compute capability 7.5) cannot run this build's kernels: built for CUDA "
                 "architectures 80 (cudaFuncGetAttributes on a probe kernel: "
                 "cudaErrorInvalidDeviceFunction); rebuild with -DCMAKE_CUDA_ARCHITECTURES=75"));
}

TEST_CASE("the build names the CUDA architectures it was compiled for", "[cuda][host]") {
  const std::string built = built_cuda_architectures();
  CHECK_FALSE(built.empty());
  CHECK(built != "unknown");                    // lib/CMakeLists.txt passed it
  CHECK(built.find(';') == std::string::npos);  // one compile definition, not several
  // Configured by cmake/Cuda.cmake (80 and 90 unless the configure step chose others).
  INFO("built for " << built);
  CHECK(built.find_first_of("0123456789") != std::string::npos);
}
