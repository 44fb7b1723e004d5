// core/writer_thread.h: jobs run in order on one other thread, at most max_pending at once, the
// first failure reaches the owner once and drops what waits, and the destructor writes what
// waits. (The TSan suite runs these: their names hold "thread", scripts/test-sanitizers.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/thread_start.h"
#include "core/writer_thread.h"

namespace {

using ra::WriterThread;

// A job that waits until the test opens its gate, so that the jobs behind it are still waiting.
struct Gate {
  std::promise<void> opened;
  std::shared_future<void> open = opened.get_future().share();
};

}  // namespace

TEST_CASE("the writer thread runs every job in order, on a thread of its own", "[core]") {
  WriterThread writer("test writer", 4);
  std::vector<int> order;  // touched only by the writer thread until finish() returns
  std::vector<std::thread::id> ran_on;
  for (int i = 0; i < 100; ++i) {
    writer.submit([&order, &ran_on, i] {
      order.push_back(i);
      ran_on.push_back(std::this_thread::get_id());
    });
  }
  writer.finish();
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
  for (const std::thread::id id : ran_on) {
    REQUIRE(id == ran_on.front());
    REQUIRE(id != std::this_thread::get_id());
  }
  // finish() again, with nothing handed over since, returns at once.
  writer.finish();
}

TEST_CASE("the writer thread holds at most max_pending jobs, and submit waits beyond", "[core]") {
  for (const std::size_t max_pending : {std::size_t{1}, std::size_t{3}}) {
    WriterThread writer("test writer", max_pending);
    std::atomic<int> in_flight{0};  // handed over (or being handed over) and not yet done
    int most = 0;
    for (int i = 0; i < 12; ++i) {
      ++in_flight;
      writer.submit([&in_flight] {
        // Slower than handing over: a submit that did not wait would let in_flight reach 12.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --in_flight;
      });
      most = std::max(most, in_flight.load());
    }
    writer.finish();
    INFO("max_pending " << max_pending);
    CHECK(most <= static_cast<int>(max_pending));
    CHECK(in_flight.load() == 0);
  }
}

TEST_CASE("the writer thread's first failure reaches finish() once and drops what waits",
          "[core]") {
  WriterThread writer("test writer", 4);
  Gate gate;
  bool later_ran = false;
  writer.submit([open = gate.open] {
    open.wait();
    throw ra::InputError("disk full writing weights-step-3.safetensors");
  });
  writer.submit([&later_ran] { later_ran = true; });  // waits behind the failing job
  gate.opened.set_value();
  try {
    writer.finish();
    FAIL("finish() did not rethrow the job's failure");
  } catch (const ra::InputError& e) {
    CHECK(std::string(e.what()) == "disk full writing weights-step-3.safetensors");
  }
  CHECK_FALSE(later_ran);
  writer.finish();  // told once
  // The writer takes new jobs after its owner was told.
  bool next_ran = false;
  writer.submit([&next_ran] { next_ran = true; });
  writer.finish();
  CHECK(next_ran);
}

TEST_CASE("the writer thread's failure reaches the next submit, which hands nothing over",
          "[core]") {
  // max_pending 1: the second submit waits for the first job to end, so it sees its failure.
  WriterThread writer("test writer", 1);
  writer.submit([] { throw ra::RuntimeFailure("write failed"); });
  bool ran = false;
  REQUIRE_THROWS_WITH(writer.submit([&ran] { ran = true; }), "write failed");
  writer.finish();
  CHECK_FALSE(ran);
}

TEST_CASE("a destroyed writer thread first runs the jobs still waiting", "[core]") {
  std::atomic<int> ran{0};
  Gate gate;
  {
    WriterThread writer("test writer", 8);
    writer.submit([open = gate.open, &ran] {
      open.wait();
      ++ran;
    });
    for (int i = 0; i < 5; ++i) writer.submit([&ran] { ++ran; });
    gate.opened.set_value();
  }  // no finish(): the destructor writes them
  CHECK(ran.load() == 6);
}

TEST_CASE("a writer thread starts only with its first job, and a refused start is named",
          "[core]") {
  ra::testing::limit_thread_starts(0);
  {
    WriterThread idle("test writer", 2);
    idle.finish();  // nothing handed over: no thread needed, none refused
  }
  WriterThread writer("snapshot writer of run 2", 2);
  bool ran = false;
  try {
    writer.submit([&ran] { ran = true; });
    ra::testing::limit_thread_starts(-1);
    FAIL("the refused start was not reported");
  } catch (const ra::RuntimeFailure& e) {
    ra::testing::limit_thread_starts(-1);
    CHECK(std::string(e.what()).find("cannot start snapshot writer of run 2") != std::string::npos);
  }
  writer.finish();
  CHECK_FALSE(ran);
}
