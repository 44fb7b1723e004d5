#include "core/stop_signals.h"

#include <atomic>

namespace ra {
namespace {

std::atomic<int> g_received{0};

extern "C" void note_signal(int signal) {
  g_received.store(signal, std::memory_order_relaxed);
}

}  // namespace

StopSignals::StopSignals() {
  g_received.store(0, std::memory_order_relaxed);
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

int StopSignals::received() noexcept {
  return g_received.load(std::memory_order_relaxed);
}

}  // namespace ra
