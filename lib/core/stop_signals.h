#pragma once
// SIGINT and SIGTERM while the tool runs other programs (exec): received, not acted on at once.
// While a StopSignals lives, the two signals only note themselves (the handler stores the number:
// async-signal-safe); run_process (core/process.h) forwards a noted signal to the process group of
// the command it waits for, and kills the group when it has not ended a grace period later, so a
// cancelled CI job or Ctrl-C stops every run and no run outlives the tool. The handlers that were
// installed before are restored when it ends.
#include <csignal>

namespace ra {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received while one lived (SIGINT, SIGTERM), or 0.
  static int received() noexcept;

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

}  // namespace ra
