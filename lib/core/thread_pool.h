#pragma once
// A fixed pool of worker threads for data-parallel loops.
//
// parallel_for hands out task indices dynamically (whichever worker is free takes the next one),
// so WHICH worker runs a task, and in which order tasks finish, varies from call to call. Code
// that must be deterministic therefore never lets the worker index influence a result: it writes
// each output from exactly one task, or reduces per-task partials in task order afterwards.
// The nondeterministic reduction paths deliberately use per-worker partials instead.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ra {

class ThreadPool {
 public:
  // `threads` is the total number of workers, the calling thread included (so 1 = no extra thread).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  // Runs body(task, worker) for task in [0, tasks); worker in [0, threads()). Blocks until all
  // tasks are done. The first exception thrown by a task is rethrown here (remaining tasks still
  // run to completion first, so no task outlives the call).
  using Body = std::function<void(std::int64_t task, int worker)>;
  void parallel_for(std::int64_t tasks, const Body& body);

  // The same, but each worker claims its next task before it runs the current one and passes it
  // as `next` (-1 when it has none): a task can prepare the next one's inputs (prefetch them)
  // while it computes. At the end a worker may hold one claimed task while another is idle, so
  // the imbalance is at most one task more than parallel_for's.
  using AheadBody = std::function<void(std::int64_t task, std::int64_t next, int worker)>;
  void parallel_for_ahead(std::int64_t tasks, const AheadBody& body);

 private:
  void worker_loop(int worker);
  void run_tasks(int worker);
  void run_tasks_ahead(int worker);
  void run(std::int64_t tasks, const Body* body, const AheadBody* ahead_body);
  void run_body(std::int64_t task, std::int64_t next, int worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::uint64_t generation_ = 0;  // bumped once per parallel_for call
  bool stopping_ = false;
  const Body* body_ = nullptr;  // one of the two is set during a call
  const AheadBody* ahead_body_ = nullptr;
  std::int64_t tasks_ = 0;
  std::atomic<std::int64_t> next_task_{0};
  int busy_workers_ = 0;  // helper threads still inside the current call
  std::exception_ptr error_;
};

// Number of hardware threads (at least 1).
int hardware_threads() noexcept;

}  // namespace ra
