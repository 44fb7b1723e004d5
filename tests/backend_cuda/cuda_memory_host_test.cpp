// cuda::DeviceMemory (backend/cuda/cuda_memory.h) without a GPU: what it says it is, that it is
// bound to the stream it was given (the backend's, so its copies are ordered with the ops by that
// stream alone), and that empty requests make no CUDA call. The copies themselves run in the [gpu]
// tests (cuda_ops_gpu_test.cpp, tests/ops).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/cuda_memory.h"

namespace {

using ra::backend::cuda::DeviceMemory;

// Any non-null value: no call below reaches the device.
cudaStream_t fake_stream() {
  return reinterpret_cast<cudaStream_t>(0x1234);
}

}  // namespace

TEST_CASE("DeviceMemory is device memory bound to the stream it is given", "[cuda][host]") {
  static_assert(!std::is_copy_constructible_v<DeviceMemory>);
  static_assert(!std::is_copy_assignable_v<DeviceMemory>);
  DeviceMemory memory(fake_stream());
  CHECK(memory.stream() == fake_stream());
  CHECK_FALSE(memory.host_accessible());
  CHECK(std::string(memory.name()) == "cuda");
  // Zero bytes and null pointers: nothing to queue, no CUDA call, works without a GPU.
  float host = 1.0f;
  REQUIRE_NOTHROW(memory.zero(nullptr, 0));
  REQUIRE_NOTHROW(memory.copy(nullptr, nullptr, 0));
  REQUIRE_NOTHROW(memory.upload(nullptr, &host, 0));
  REQUIRE_NOTHROW(memory.download(&host, nullptr, 0));
  memory.deallocate(nullptr);
  CHECK(host == 1.0f);
}

TEST_CASE("PinnedHostMemory is host memory, one for the process, and empty requests need no GPU",
          "[cuda][host]") {
  ra::backend::cuda::PinnedHostMemory& pinned = ra::backend::cuda::pinned_host_memory();
  CHECK(&pinned == &ra::backend::cuda::pinned_host_memory());
  CHECK(pinned.host_accessible());
  CHECK(std::string(pinned.name()) == "cuda-pinned");
  float a = 1.0f, b = 2.0f;
  pinned.copy(&a, &b, sizeof(float));  // a host memmove: no CUDA call
  CHECK(a == 2.0f);
  pinned.deallocate(nullptr);
  // Downloads of zero bytes queue nothing and wait for nothing: no CUDA call on the fake stream.
  DeviceMemory memory(fake_stream());
  const std::vector<ra::Download> empty = {{&a, nullptr, 0}, {&b, nullptr, 0}};
  REQUIRE_NOTHROW(memory.download_all(empty));
  REQUIRE_NOTHROW(memory.download_all({}));
  CHECK(a == 2.0f);
  CHECK(b == 2.0f);
}
