#include "core/thread_start.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "core/error.h"

namespace ra {
namespace {

int limit_from_environment() {
  const char* text = std::getenv("REPRO_AUDIT_TEST_THREAD_LIMIT");
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value >= 0 && value < 1000000) ? static_cast<int>(value) : -1;
}

// Starts left before the hook refuses; -1 = no hook.
std::atomic<int>& starts_left() {
  static std::atomic<int> left{limit_from_environment()};
  return left;
}

// True when the test hook refuses this start.
bool hook_refuses() {
  std::atomic<int>& left = starts_left();
  int n = left.load();
  while (n >= 0) {
    if (n == 0) return true;
    if (left.compare_exchange_weak(n, n - 1)) return false;
  }
  return false;
}

}  // namespace

std::thread start_thread(const std::string& what, std::function<void()> body) {
  try {
    if (hook_refuses()) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                              "test hook REPRO_AUDIT_TEST_THREAD_LIMIT");
    }
    return std::thread(std::move(body));
  } catch (const std::system_error& e) {
    throw RuntimeFailure("cannot start " + what + ": " + e.code().message() +
                         " (the limit on threads per user, ulimit -u, the container's pids.max "
                         "or memory is reached); use fewer --threads or --jobs, or raise the "
                         "limit");
  }
}

namespace testing {
void limit_thread_starts(int allowed) {
  starts_left().store(allowed < 0 ? -1 : allowed);
}
}  // namespace testing

}  // namespace ra
