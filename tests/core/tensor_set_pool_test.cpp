// core/tensor_set_pool.h: the staging buffers of weight snapshots are allocated once and reused,
// return from any thread, and may outlive the pool.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <thread>

#include "core/tensor_set_pool.h"
#include "support/counting_host_memory.h"
#include "support/fake_device_memory.h"

namespace {

using ra::Shape;
using ra::TensorSetPool;
using ra::test::CountingHostMemory;

const std::vector<Shape> kShapes = {{3, 2, 5, 5}, {3}, {4, 12}};

}  // namespace

TEST_CASE("a dropped set is reused: the same buffers, no allocation", "[core]") {
  CountingHostMemory memory;
  TensorSetPool pool(memory);
  const float* first_data = nullptr;
  {
    auto set = pool.acquire(kShapes);
    REQUIRE(set->size() == 3);
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      REQUIRE((*set)[i].shape() == kShapes[i]);
      REQUIRE(&(*set)[i].memory() == &memory);
    }
    first_data = (*set)[0].data();
  }
  REQUIRE(pool.sets_free() == 1);
  const std::size_t allocated = memory.allocations;
  REQUIRE(allocated == 3);
  for (int i = 0; i < 5; ++i) {
    auto set = pool.acquire(kShapes);
    REQUIRE((*set)[0].data() == first_data);
    REQUIRE(pool.sets_free() == 0);
  }
  REQUIRE(memory.allocations == allocated);
  REQUIRE(pool.sets_made() == 1);
}

TEST_CASE("the pool holds as many sets as were out at once", "[core]") {
  CountingHostMemory memory;
  TensorSetPool pool(memory);
  {
    auto a = pool.acquire(kShapes);
    auto b = pool.acquire(kShapes);
    auto c = pool.acquire(kShapes);
    REQUIRE((*a)[0].data() != (*b)[0].data());
    REQUIRE((*b)[0].data() != (*c)[0].data());
  }
  REQUIRE(pool.sets_made() == 3);
  REQUIRE(pool.sets_free() == 3);
  // Two out at a time from now on: no new set.
  for (int i = 0; i < 4; ++i) {
    auto a = pool.acquire(kShapes);
    auto b = pool.acquire(kShapes);
  }
  REQUIRE(pool.sets_made() == 3);
  REQUIRE(memory.allocations == 9);
}

TEST_CASE("a reused set takes new shapes, reallocating only a tensor grown past its buffer",
          "[core]") {
  CountingHostMemory memory;
  TensorSetPool pool(memory);
  { auto set = pool.acquire({{10}, {4}}); }
  REQUIRE(memory.allocations == 2);
  {
    // Smaller, larger, and one tensor more than before.
    auto set = pool.acquire({{6}, {2, 8}, {5}});
    REQUIRE(set->size() == 3);
    REQUIRE((*set)[0].shape() == Shape{6});
    REQUIRE((*set)[1].shape() == Shape{2, 8});
    REQUIRE((*set)[2].shape() == Shape{5});
    REQUIRE(&(*set)[2].memory() == &memory);
  }
  REQUIRE(memory.allocations == 4);  // the grown tensor and the new one
  { auto set = pool.acquire({{1}}); }
  REQUIRE(memory.allocations == 4);
  REQUIRE(pool.sets_made() == 1);
}

TEST_CASE("a set dropped on another thread returns to the pool", "[core]") {
  CountingHostMemory memory;
  TensorSetPool pool(memory);
  for (int round = 0; round < 20; ++round) {
    auto set = pool.acquire(kShapes);
    std::thread writer([owned = std::move(set)]() mutable { owned.reset(); });
    auto other = pool.acquire(kShapes);  // while the thread may still hold the first
    writer.join();
  }
  REQUIRE(pool.sets_made() <= 2);
  REQUIRE(pool.sets_free() == pool.sets_made());
}

TEST_CASE("a set may outlive its pool, and is freed with it", "[core]") {
  CountingHostMemory memory;
  std::shared_ptr<TensorSetPool::Set> survivor;
  {
    TensorSetPool pool(memory);
    { auto returned = pool.acquire(kShapes); }
    survivor = pool.acquire({{7}});
  }
  REQUIRE((*survivor)[0].size() == 7);
  survivor.reset();
  REQUIRE(memory.frees == memory.allocations);
}

TEST_CASE("a pool in memory the host cannot read is refused", "[core]") {
  ra::test::FakeDeviceMemory device;
  REQUIRE_THROWS_AS(TensorSetPool(device), std::invalid_argument);
}
