// CudaOps (backend/cuda/cuda_ops.h) memory: upload, copy, zero and download; digests of regions
// hashed on the device against the host's. Every op of CudaOps is checked against the reference
// by the op table (tests/ops, "every op on CUDA"). Needs a device: tagged [gpu], skips with the
// reason when query_device() finds none.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend_test_util.h"
#include "backend/cuda/cuda_ops.h"
#include "backend_cuda/gpu_test_support.h"
#include "core/digest.h"
#include "core/error.h"

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
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
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

TEST_CASE("CudaOps digest_regions equals the host digest of the same bytes", "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& memory = ops->memory();
  // Three chunks and a tail of floats, a few ints, an odd count of bytes, an empty region: what
  // the op recorder hashes of an op's inputs and outputs (record/op_recorder.h).
  const auto floats = test::random_values(3 * 16384 + 77, 9);
  const std::vector<std::int32_t> ints = {3, -1, 7, 0, 2};
  const std::vector<std::uint8_t> bytes = {1, 0, 1, 1, 0, 0, 1};
  DeviceArray<float> f(memory, floats);
  DeviceArray<std::int32_t> i(memory, ints);
  DeviceArray<std::uint8_t> u(memory, bytes);
  using ra::backend::MemoryRegion;
  const std::vector<MemoryRegion> regions = {
      {ra::DType::f32, f.get(), std::int64_t(floats.size())},
      {ra::DType::i32, i.get(), std::int64_t(ints.size())},
      {ra::DType::u8, u.get(), std::int64_t(bytes.size())},
      {ra::DType::f32, f.get() + 5, 0},
  };
  const std::vector<ra::Digest128> got = ops->digest_regions(regions);
  REQUIRE(got.size() == 4);
  CHECK(got[0] == ra::digest_bytes(ra::DType::f32, ra::Shape{std::int64_t(floats.size())},
                                   floats.data(), floats.size() * sizeof(float)));
  CHECK(got[1] == ra::digest_bytes(ra::DType::i32, ra::Shape{5}, ints.data(), 5 * 4));
  CHECK(got[2] == ra::digest_bytes(ra::DType::u8, ra::Shape{7}, bytes.data(), 7));
  CHECK(got[3] == ra::digest_bytes(ra::DType::f32, ra::Shape{0}, floats.data(), 0));
}

TEST_CASE("CudaOps staging memory: pinned, and one batched download equals each alone",
          "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& staging = ops->staging_memory();
  REQUIRE(staging.host_accessible());
  CHECK(std::string(staging.name()) == "cuda-pinned");
  const auto first = test::random_values(70001, 3), second = test::random_values(13, 4);
  DeviceArray<float> a(ops->memory(), first), b(ops->memory(), second);
  auto* pinned_a = static_cast<float*>(staging.allocate(first.size() * sizeof(float)));
  auto* pinned_b = static_cast<float*>(staging.allocate(second.size() * sizeof(float)));
  unsigned int flags = 0;
  RA_TEST_CUDA(cudaHostGetFlags(&flags, pinned_a));  // fails for pageable memory
  const std::vector<ra::Download> downloads = {{pinned_a, a.get(), first.size() * sizeof(float)},
                                               {pinned_b, b.get(), second.size() * sizeof(float)},
                                               {pinned_b, b.get(), 0}};
  ops->memory().download_all(downloads);
  CHECK(test::same_bits(std::vector<float>(pinned_a, pinned_a + first.size()), a.host()));
  CHECK(test::same_bits(std::vector<float>(pinned_b, pinned_b + second.size()), second));
  staging.deallocate(pinned_a);
  staging.deallocate(pinned_b);
}

TEST_CASE("CudaOps loss_when_done: the loss's bits at synchronize, a bad label thrown there",
          "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
  const int n = 37, classes = 10;
  const auto logits = test::random_values(n * classes, 11);
  std::vector<std::int32_t> labels(n);
  for (int i = 0; i < n; ++i) labels[std::size_t(i)] = (i * 7) % classes;
  DeviceArray<float> x(ops->memory(), logits), grad(ops->memory(), std::vector<float>(n * classes));
  DeviceArray<std::int32_t> y(ops->memory(), labels);
  using Kind = ra::backend::Ops::LossKind;
  for (const Kind kind : {Kind::softmax_cross_entropy, Kind::mean_squared_error}) {
    const float eager = kind == Kind::mean_squared_error
                            ? ops->mean_squared_error(n, classes, x.get(), y.get(), grad.get(),
                                                      KernelMode::deterministic)
                            : ops->softmax_cross_entropy(n, classes, x.get(), y.get(), grad.get(),
                                                         KernelMode::deterministic);
    const auto eager_grad = grad.host();
    float late = -1.0f;
    ops->loss_when_done(kind, n, classes, x.get(), y.get(), grad.get(), KernelMode::deterministic,
                        &late);
    ops->synchronize();
    CHECK(test::same_bits(std::vector<float>{late}, std::vector<float>{eager}));
    CHECK(test::same_bits(grad.host(), eager_grad));
  }
  labels[5] = classes;  // outside [0, classes)
  DeviceArray<std::int32_t> bad(ops->memory(), labels);
  float value = 0.0f;
  ops->loss_when_done(Kind::softmax_cross_entropy, n, classes, x.get(), bad.get(), grad.get(),
                      KernelMode::deterministic, &value);
  REQUIRE_THROWS_AS(ops->synchronize(), ra::InputError);
  REQUIRE_NOTHROW(ops->synchronize());  // told once
}

TEST_CASE("CudaOps digest_when_done: the tensors' digests as they were, stored at synchronize",
          "[gpu][cuda_ops]") {
  RA_SKIP_WITHOUT_USABLE_GPU();
  const auto ops = ra::backend::cuda::make_cuda_ops(KernelMode::deterministic);
  ra::Memory& memory = ops->memory();
  // Several 64 KiB chunks and a tail, a one-element tensor, an empty one: shapes kept.
  std::vector<ra::Tensor> host;
  host.emplace_back(ra::Shape{7, 3 * 16384 + 5});
  host.emplace_back(ra::Shape{1, 1});
  host.emplace_back(ra::Shape{0, 4});
  std::uint32_t seed = 21;
  for (ra::Tensor& t : host) {
    const auto values = test::random_values(t.size(), seed++);
    std::copy(values.begin(), values.end(), t.begin());
  }
  std::vector<ra::Tensor> device;
  for (const ra::Tensor& t : host) {
    device.emplace_back(t.shape(), memory);
    device.back().copy_from(t);
  }
  const std::vector<const ra::Tensor*> all = {&device[0], &device[1], &device[2]};
  for (int round = 0; round < 2; ++round) {  // the second reuses the first's buffers
    const ra::Digest128 untouched{7, 7};
    auto first = std::make_shared<std::vector<ra::Digest128>>(1, untouched);
    auto second = std::make_shared<std::vector<ra::Digest128>>();
    ops->digest_when_done(all, first);
    // Queued after the digests: hashed before it, as a step queued after them would be.
    memory.zero(device[0].data(), device[0].bytes());
    // A second request before the wait: more chunks, a larger readback buffer. Its caller drops
    // its share at once: the backend holds the target until it stores into it.
    ops->digest_when_done({&device[1], &device[0]}, second);
    const std::weak_ptr<std::vector<ra::Digest128>> held = second;
    second.reset();
    CHECK(*first == std::vector<ra::Digest128>{untouched});  // not before the wait
    CHECK_FALSE(held.expired());
    ops->synchronize();
    CHECK(held.expired());  // stored, and let go
    REQUIRE(first->size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK((*first)[i] == ra::digest(host[i]));
    CHECK(ops->digest({&device[0]})[0] == ra::digest(ra::Tensor(host[0].shape())));  // zeros
    device[0].copy_from(host[0]);
  }
  auto both = std::make_shared<std::vector<ra::Digest128>>();
  ops->digest_when_done({&device[1], &device[0]}, both);
  ops->synchronize();
  REQUIRE(both->size() == 2);
  CHECK((*both)[0] == ra::digest(host[1]));
  CHECK((*both)[1] == ra::digest(host[0]));
  auto none = std::make_shared<std::vector<ra::Digest128>>(1, ra::Digest128{1, 2});
  ops->digest_when_done({}, none);
  ops->synchronize();
  CHECK(none->empty());
}
