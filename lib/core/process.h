#pragma once
// Running another program and waiting for it (repro-audit exec: the user's training command, once
// per run). The tool owns what it starts: the command runs in a process group of its own, with
// PR_SET_PDEATHSIG (Linux: the kernel kills it when the thread that started it ends, so a
// `kill -9` of the tool does not leave it training) and a guard process that kills its whole
// group when the tool ends in any way (what the command started: torchrun's ranks), its stdout and
// stderr into one bounded log (core/log_ring.h; stdout of repro-audit carries results only), stdin
// /dev/null, no shell in between. A time limit ends it (SIGTERM to its group, SIGKILL a grace
// period later); SIGINT or SIGTERM noted by core/stop_signals.h is forwarded to its group; and when
// the command has ended, or anything goes wrong while waiting, whatever is left of its group is
// killed: no run outlives its wait.
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/log_ring.h"

namespace ra {

struct ProcessLimits {
  double timeout_seconds = 0.0;  // > 0: the command is stopped after that long
  double grace_seconds = 5.0;    // after SIGTERM (a time limit, a forwarded signal): SIGKILL
  std::size_t log_bytes = kCommandLogBytes;
};

struct ProcessResult {
  int exit_code = -1;      // 0..255 when it exited
  int signal = 0;          // the signal that ended it, else 0
  bool timed_out = false;  // stopped by the time limit
  int forwarded = 0;       // the signal the tool received and forwarded to it (SIGINT, SIGTERM)
  double timeout_seconds = 0.0;
  bool ok() const noexcept { return signal == 0 && exit_code == 0 && !timed_out && !forwarded; }
  // "exit status 2", "killed by signal 9 (Killed)", "timed out after 30 s (--timeout) and was
  // stopped: killed by signal 15 (Terminated)", "was stopped: repro-audit received signal 2 ..."
  std::string describe() const;
};

// Runs `argv` (argv[0] looked up in PATH) with the environment of this process and `environment`
// set on top, its output (stdout and stderr) into the ring `log` (replaced), and waits for it.
// InputError naming the command when it cannot be started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& environment,
                          const std::filesystem::path& log, const ProcessLimits& limits = {});

// The last `lines` lines of a text file (at most 64 KiB of its end), for messages.
std::string last_lines(const std::filesystem::path& file, std::size_t lines);
// The same on one line, joined by " | ", for a message (a log keeps a record to a line).
std::string last_lines_joined(const std::filesystem::path& file, std::size_t lines);

}  // namespace ra
