// CudaOps (backend/cuda/cuda_ops.h) memory: upload, copy, zero and download. Every op of CudaOps is
// checked against the reference by the op table (tests/ops, "every op on CUDA"). Needs a device:
// tagged [gpu], skips with the reason when query_device() finds none.
#include <catch2/catch.hpp>

#include <vector>

#include "backend/backend_test_util.h"
#include "backend/cuda/cuda_ops.h"
#include "backend_cuda/gpu_test_support.h"

namespace {

using ra::backend::KernelMode;

// A device array in the backend's memory, filled from the host.
template <class T>
class DeviceArray {
 public:
  DeviceArray(ra::Memory& memory, const std::vector<T>& host)
      : memory_(memory), count_(host.size()), data_(memory.allocate(host.size() * sizeof(T))) {
    memory_.upload(data_, host.data(), count_ * sizeof(T));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { memory_.deallocate(data_); }
  T* get() const { return static_cast<T*>(data_); }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    memory_.download(out.data(), data_, count_ * sizeof(T));
    return out;
  }

 private:
  ra::Memory& memory_;
  std::size_t count_;
  void* data_;
};

}  // namespace

TEST_CASE("CudaOps memory: upload, copy, zero, download", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& memory = ops->memory();
  CHECK_FALSE(memory.host_accessible());
  const auto values = test::random_values(1001, 7);
  DeviceArray<float> a(memory, values), b(memory, std::vector<float>(1001, 5.0f));
  memory.copy(b.get(), a.get(), 1001 * sizeof(float));
  CHECK(test::same_bits(b.host(), values));
  memory.zero(a.get() + 1, 999 * sizeof(float));
  const auto zeroed = a.host();
  CHECK(zeroed[0] == values[0]);
  CHECK(zeroed[1000] == values[1000]);
  for (int i = 1; i < 1000; ++i) REQUIRE(zeroed[std::size_t(i)] == 0.0f);
}
