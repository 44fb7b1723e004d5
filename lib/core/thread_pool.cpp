#include "core/thread_pool.h"

#include <stdexcept>
#include <string>

#include "core/thread_start.h"

namespace ra {

int hardware_threads() noexcept {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// A worker the system refuses (start_thread throws ra::RuntimeFailure: ulimit -u, pids.max,
// memory) ends the constructor with that exception. The destructor does not run for a
// constructor that throws, so the workers already started are stopped and joined here:
// destroying them joinable would call std::terminate.
ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw std::invalid_argument("ThreadPool needs at least one thread");
  workers_.reserve(threads - 1);
  try {
    for (int w = 1; w < threads; ++w) {
      workers_.push_back(start_thread(
          "thread pool worker " + std::to_string(w) + " of " + std::to_string(threads - 1),
          [this, w] { worker_loop(w); }));
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_body(std::int64_t task, std::int64_t next, int worker) {
  try {
    if (ahead_body_ != nullptr) {
      (*ahead_body_)(task, next, worker);
    } else {
      (*body_)(task, worker);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::run_tasks(int worker) {
  if (ahead_body_ != nullptr) {
    std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    while (task < tasks_) {
      const std::int64_t next = next_task_.fetch_add(1, std::memory_order_relaxed);
      run_body(task, next < tasks_ ? next : -1, worker);
      task = next;
    }
    return;
  }
  for (;;) {
    const std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= tasks_) return;
    run_body(task, -1, worker);
  }
}

void ThreadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_tasks(worker);
    {
      std::lock_guard lock(mutex_);
      if (--busy_workers_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t tasks, const Body& body) {
  run(tasks, &body, nullptr);
}

void ThreadPool::parallel_for_ahead(std::int64_t tasks, const AheadBody& body) {
  run(tasks, nullptr, &body);
}

void ThreadPool::run(std::int64_t tasks, const Body* body, const AheadBody* ahead_body) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (std::int64_t t = 0; t < tasks; ++t) {
      if (ahead_body != nullptr) {
        (*ahead_body)(t, t + 1 < tasks ? t + 1 : -1, 0);
      } else {
        (*body)(t, 0);
      }
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = body;
    ahead_body_ = ahead_body;
    tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_tasks(0);
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_workers_ == 0; });
    body_ = nullptr;
    ahead_body_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ra
