#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

TEST_CASE("parallel_for runs every task exactly once", "[core]") {
  for (int threads : {1, 2, 7}) {
    ra::ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(1000);
    for (int repeat = 0; repeat < 3; ++repeat) {
      pool.parallel_for(1000, [&](std::int64_t t, int worker) {
        REQUIRE(worker >= 0);
        REQUIRE(worker < threads);
        hits[t].fetch_add(1);
      });
    }
    for (auto& h : hits) REQUIRE(h.load() == 3);
  }
}

TEST_CASE("parallel_for rethrows the first task exception after all tasks end", "[core]") {
  ra::ThreadPool pool(3);
  std::atomic<int> ran{0};
  REQUIRE_THROWS_AS(pool.parallel_for(50,
                                      [&](std::int64_t t, int) {
                                        ran.fetch_add(1);
                                        if (t == 7) throw std::runtime_error("task 7");
                                      }),
                    std::runtime_error);
  REQUIRE(ran.load() == 50);
  // The pool stays usable after an exception.
  std::atomic<int> again{0};
  pool.parallel_for(10, [&](std::int64_t, int) { again.fetch_add(1); });
  REQUIRE(again.load() == 10);
}
