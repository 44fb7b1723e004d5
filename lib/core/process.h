#pragma once
// Running another program and waiting for it (repro-audit exec: the user's training command, once
// per run): posix_spawnp with the caller's environment plus some variables, its stdout and stderr
// into one log file (stdout of repro-audit carries results only), no shell in between.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ra {

struct ProcessResult {
  int exit_code = -1;  // 0..255 when it exited
  int signal = 0;      // the signal that ended it, else 0
  bool ok() const noexcept { return signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit status 2", "killed by signal 9 (Killed)"
};

// Runs `argv` (argv[0] looked up in PATH) with the environment of this process and `environment`
// set on top, its output (stdout and stderr) appended to `log`, and waits for it. InputError
// naming the command when it cannot be started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& environment,
                          const std::filesystem::path& log);

// The last `lines` lines of a text file (at most 64 KiB of its end), for messages.
std::string last_lines(const std::filesystem::path& file, std::size_t lines);

}  // namespace ra
