#include "core/thread_pool.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "core/thread_start.h"

namespace ra {

namespace {

// How long a thread spins before it sleeps. A sleeping helper costs the next parallel_for a
// wake-up through the kernel, and on a virtual machine the wake-up of an idle vCPU: 7 to 50 us a
// call on this 2-vCPU machine (20,000 calls of 4 empty tasks), against 2 us with the helper
// spinning. A ResNet29v2 step makes some 300 calls, most a few microseconds after the last. A
// spin takes its core from other runnable threads, hence short: with two busy processes beside
// a run, a ResNet29v2 step took 1.03 times as long as without spinning, against 0.90-0.97 on an
// idle machine (docs/performance.md); 50 us cost more under load, 5 us gained little when idle.
constexpr std::chrono::microseconds kSpin{20};

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done()'s last answer.
template <class Done>
bool spin_until(const Done& done) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 16 == 0 && std::chrono::steady_clock::now() - start > kSpin) return done();
  }
}

}  // namespace

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
      stopping_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true, std::memory_order_release);
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

void ThreadPool::wait_for_call(std::uint64_t seen) {
  const auto called = [&] {
    return stopping_.load(std::memory_order_acquire) ||
           generation_.load(std::memory_order_acquire) != seen;
  };
  if (spin_until(called)) return;
  std::unique_lock lock(mutex_);
  ++sleeping_workers_;
  wake_.wait(lock, called);
  --sleeping_workers_;
}

void ThreadPool::wait_for_helpers() {
  const auto done = [&] { return busy_workers_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done)) return;
  std::unique_lock lock(mutex_);
  caller_sleeping_ = true;
  done_.wait(lock, done);
  caller_sleeping_ = false;
}

void ThreadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    wait_for_call(seen);
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_tasks(worker);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The last helper out: wake the caller if it went to sleep (it checks the count under the
      // mutex before it sleeps, so taking the mutex here cannot miss it).
      std::lock_guard lock(mutex_);
      if (caller_sleeping_) done_.notify_one();
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
  bool sleepers = false;
  {
    std::lock_guard lock(mutex_);
    body_ = body;
    ahead_body_ = ahead_body;
    tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
    sleepers = sleeping_workers_ > 0;
  }
  if (sleepers) wake_.notify_all();
  run_tasks(0);
  wait_for_helpers();
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    body_ = nullptr;
    ahead_body_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ra
