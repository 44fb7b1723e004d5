#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "core/thread_start.h"

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

TEST_CASE("parallel_for_ahead tells each task the task its worker runs next", "[core]") {
  for (int threads : {1, 2, 7}) {
    for (std::int64_t tasks : {1, 2, 5, 1000}) {
      INFO(threads << " threads, " << tasks << " tasks");
      ra::ThreadPool pool(threads);
      // Each worker's (task, next) pairs in the order it ran them: only that worker writes its
      // list, so no lock is needed.
      std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> runs(threads);
      std::atomic<bool> bad_worker{false};
      pool.parallel_for_ahead(tasks, [&](std::int64_t task, std::int64_t next, int worker) {
        if (worker < 0 || worker >= threads) {
          bad_worker = true;
          return;
        }
        runs[worker].emplace_back(task, next);
      });
      REQUIRE_FALSE(bad_worker.load());
      std::vector<int> hits(static_cast<std::size_t>(tasks));
      for (const auto& run : runs) {
        for (std::size_t i = 0; i < run.size(); ++i) {
          ++hits[static_cast<std::size_t>(run[i].first)];
          const std::int64_t expected_next = i + 1 < run.size() ? run[i + 1].first : -1;
          REQUIRE(run[i].second == expected_next);
        }
      }
      for (int h : hits) REQUIRE(h == 1);
    }
  }
}

TEST_CASE("parallel_for_ahead rethrows a task exception after all tasks end", "[core]") {
  ra::ThreadPool pool(3);
  std::atomic<int> ran{0};
  REQUIRE_THROWS_AS(pool.parallel_for_ahead(40,
                                            [&](std::int64_t t, std::int64_t, int) {
                                              ran.fetch_add(1);
                                              if (t == 11) throw std::runtime_error("task 11");
                                            }),
                    std::runtime_error);
  REQUIRE(ran.load() == 40);
  std::atomic<int> again{0};
  pool.parallel_for(10, [&](std::int64_t, int) { again.fetch_add(1); });
  REQUIRE(again.load() == 10);
}

TEST_CASE("a thread the system refuses is a RuntimeFailure, not a hang or a terminate",
          "[core][threads]") {
  // The hook refuses the third start: the pool has started two workers, must join them and
  // throw. Before, the exception left two joinable std::threads behind (std::terminate).
  ra::testing::limit_thread_starts(2);
  try {
    ra::ThreadPool pool(8);
    ra::testing::limit_thread_starts(-1);
    FAIL("the pool started its 7 workers past the limit");
  } catch (const ra::RuntimeFailure& e) {
    ra::testing::limit_thread_starts(-1);
    const std::string message = e.what();
    CHECK(message.find("cannot start thread pool worker 3 of 7") != std::string::npos);
    CHECK(message.find("ulimit -u") != std::string::npos);
  }
  // Threads can be started again once the limit is lifted.
  ra::ThreadPool pool(3);
  std::atomic<int> ran{0};
  pool.parallel_for(10, [&](std::int64_t, int) { ran.fetch_add(1); });
  CHECK(ran.load() == 10);
}

TEST_CASE("start_thread runs its body on a new thread", "[core][threads]") {
  std::atomic<bool> ran{false};
  std::thread t = ra::start_thread("a test thread", [&] { ran = true; });
  t.join();
  CHECK(ran.load());
}
