#include "core/writer_thread.h"

#include <algorithm>
#include <utility>

#include "core/thread_start.h"

namespace ra {

WriterThread::WriterThread(std::string name, std::size_t max_pending)
    : name_(std::move(name)), max_pending_(std::max<std::size_t>(max_pending, 1)) {}

WriterThread::~WriterThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WriterThread::submit(std::function<void()> job) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return failure_ || pending() < max_pending_; });
  rethrow_failure(lock);
  if (!thread_.joinable()) thread_ = start_thread(name_, [this] { loop(); });
  jobs_.push_back(std::move(job));
  lock.unlock();
  changed_.notify_all();
}

void WriterThread::finish() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return pending() == 0; });
  rethrow_failure(lock);
}

void WriterThread::rethrow_failure(std::unique_lock<std::mutex>& lock) {
  if (!failure_) return;
  const std::exception_ptr failure = std::exchange(failure_, nullptr);
  lock.unlock();
  std::rethrow_exception(failure);
}

void WriterThread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left to write
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      job();
    } catch (...) {
      failure = std::current_exception();
    }
    job = nullptr;  // what the job held is freed before the owner is told it is done
    lock.lock();
    running_ = false;
    if (failure) {
      if (!failure_) failure_ = failure;
      jobs_.clear();
    }
    changed_.notify_all();
  }
}

}  // namespace ra
