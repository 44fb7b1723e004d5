#pragma once
// One thread that runs jobs (file writes) in the order they were handed over, so that the thread
// handing them over goes on meanwhile: a run trains its next steps while a weight snapshot is
// encoded, written and fsync'ed (record/run_observers.h).
//
// - At most `max_pending` jobs wait or run at once; submit() blocks beyond that, so the memory
//   the jobs hold stays bounded, and a disk slower than the training holds the training back
//   rather than the memory growing.
// - The first job that throws stops the rest: its exception reaches the owner at the next
//   submit() or at finish(), and the jobs still waiting are dropped unrun (a write after a full
//   disk would fail too, and the owner is told of the first).
// - The thread starts with the first job (core/thread_start.h: a refused start throws
//   ra::RuntimeFailure from submit()), so an owner that hands over nothing starts none.
// - The destructor runs the jobs still waiting (what they write was computed), then joins. Their
//   failures are dropped there: an owner that must know calls finish() first.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ra {

class WriterThread {
 public:
  // `name` names the thread in a refused start's message ("snapshot writer of run 2").
  WriterThread(std::string name, std::size_t max_pending);
  WriterThread(const WriterThread&) = delete;
  WriterThread& operator=(const WriterThread&) = delete;
  ~WriterThread();

  // Hands `job` over. Rethrows an earlier job's failure instead (once); blocks while
  // `max_pending` jobs wait or run.
  void submit(std::function<void()> job);
  // Returns once every job handed over has run; rethrows the first failure (once).
  void finish();

 private:
  void loop();
  std::size_t pending() const { return jobs_.size() + (running_ ? 1 : 0); }
  void rethrow_failure(std::unique_lock<std::mutex>& lock);

  std::string name_;
  std::size_t max_pending_;
  std::mutex mutex_;
  std::condition_variable changed_;  // a job handed over or done, or stopping_ set
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: started after, joined before, the members it uses
};

}  // namespace ra
