#pragma once
// Starting a thread when the system may refuse one. std::thread's constructor throws
// std::system_error (EAGAIN) when the user's process limit (ulimit -u), the cgroup's pids.max
// or memory for the stack runs out; callers that start several threads must then stop and join
// the ones already running (a joinable std::thread destroyed during unwinding calls
// std::terminate). start_thread turns the refusal into ra::RuntimeFailure (exit 3) that says
// what could not be started and what to do.
#include <functional>
#include <string>
#include <thread>

namespace ra {

// Starts a thread running `body`. `what` names it for the message ("thread pool worker 3 of 8").
// Throws ra::RuntimeFailure when the thread cannot be created.
std::thread start_thread(const std::string& what, std::function<void()> body);

namespace testing {
// Test hook: after `allowed` more successful start_thread calls in this process, every later one
// fails as if the system had refused (EAGAIN); a negative value turns the hook off. The
// environment variable REPRO_AUDIT_TEST_THREAD_LIMIT=N sets it at start-up, so end-to-end tests
// can exercise the failure without changing the machine's limits (root ignores ulimit -u).
void limit_thread_starts(int allowed);
}  // namespace testing

}  // namespace ra
