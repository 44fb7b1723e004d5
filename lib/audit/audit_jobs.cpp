// K runs of an audit at once (audit/audit_jobs.h).
#include "audit/audit_jobs.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_start.h"

namespace ra::audit {
namespace {

// The shared state of the job threads: the next index to hand out and the first failure.
class JobQueue {
 public:
  JobQueue(std::size_t count, const std::function<void(std::size_t)>& run)
      : count_(count), run_(run) {}

  // The body of one job thread: runs indices until none is left or something failed.
  void work() {
    for (;;) {
      if (failed()) return;
      const std::size_t i = next_.fetch_add(1);
      if (i >= count_) return;
      try {
        run_(i);
      } catch (...) {
        fail(std::current_exception());
      }
    }
  }

  void fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
  }

  void rethrow_failure() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  bool failed() {
    std::lock_guard lock(mutex_);
    return error_ != nullptr;
  }

  const std::size_t count_;
  const std::function<void(std::size_t)>& run_;
  std::atomic<std::size_t> next_{0};
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace

void run_jobs(std::size_t count, int jobs, const std::function<void(std::size_t)>& run) {
  jobs = std::clamp(jobs, 1, std::max(1, static_cast<int>(count)));
  if (jobs == 1) {
    for (std::size_t i = 0; i < count; ++i) run(i);
    return;
  }
  JobQueue queue(count, run);
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j) {
    try {
      workers.push_back(
          start_thread("audit job " + std::to_string(j + 1) + " of " + std::to_string(jobs),
                       [&queue] { queue.work(); }));
    } catch (...) {  // the jobs already started see the failure, finish their run, are joined
      queue.fail(std::current_exception());
      break;
    }
  }
  for (std::thread& t : workers) t.join();
  queue.rethrow_failure();
}

}  // namespace ra::audit
