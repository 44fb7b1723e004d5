#pragma once
// A fixed pool of worker threads for data-parallel loops.
//
// Between calls the helper threads spin for a while (20 us, thread_pool.cpp) before they sleep on
// a condition variable, and so does the caller waiting for the helpers: a training step makes
// hundreds of parallel_for calls a few microseconds apart, and a wake-up through the kernel costs
// tens of microseconds on a virtual machine. Spinning changes who waits how, never which task
// runs what: results are as before.
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

  // Waits until generation_ differs from `seen` or the pool stops: spinning first, then asleep.
  void wait_for_call(std::uint64_t seen);
  // Waits until every helper thread has left the current call: spinning first, then asleep.
  void wait_for_helpers();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // Bumped once per parallel_for call, under mutex_, after the call's fields below are set; read
  // without the mutex by spinning workers (acquire: they then see those fields).
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  const Body* body_ = nullptr;  // one of the two is set during a call
  const AheadBody* ahead_body_ = nullptr;
  std::int64_t tasks_ = 0;
  std::atomic<std::int64_t> next_task_{0};
  std::atomic<int> busy_workers_{0};  // helper threads still inside the current call
  int sleeping_workers_ = 0;          // helpers asleep on wake_ (under mutex_)
  bool caller_sleeping_ = false;      // the calling thread asleep on done_ (under mutex_)
  std::exception_ptr error_;
};

// Number of hardware threads (at least 1).
int hardware_threads() noexcept;

}  // namespace ra
