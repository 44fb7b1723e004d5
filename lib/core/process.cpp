// Running a command the tool owns (core/process.h): spawned into its own process group, its
// output pumped into a bounded log, its time limit and forwarded signals applied, its group killed
// when the wait ends.
#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/stop_signals.h"

extern char** environ;

namespace ra {
namespace {

using Clock = std::chrono::steady_clock;

// argv[0] as execvp would find it, looked up here: the child may only make async-signal-safe
// calls between fork and exec (the tool has threads), and execvp's PATH search allocates.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;  // as execvp: a folder of that name is passed over
    }
    begin = end + 1;
  }
  throw InputError("cannot run '" + name + "': " + std::strerror(ENOENT) + " (not in PATH)");
}

// The environment: this process's, with the given variables replaced or added.
std::vector<std::string> environment_text(
    const std::vector<std::pair<std::string, std::string>>& environment) {
  std::map<std::string, std::string> variables;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) variables[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : environment) variables[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : variables) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child between fork and exec: async-signal-safe calls only. Reports a failed exec's errno
// through `error_fd` (close-on-exec: a successful exec closes it, and the parent reads nothing).
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp,
                             int output_fd, int error_fd, pid_t parent) {
  ::setpgid(0, 0);
  // Killed when the thread that started it ends (a `kill -9` of the tool included).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the tool ended before the line above
  ::signal(SIGPIPE, SIG_DFL);  // the tool ignores it; the command must not inherit that
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(output_fd, STDOUT_FILENO) < 0 ||
      ::dup2(output_fd, STDERR_FILENO) < 0) {
    const int e = errno;
    (void)!::write(error_fd, &e, sizeof e);
    ::_exit(127);
  }
  ::execve(program, argv, envp);
  const int e = errno;
  (void)!::write(error_fd, &e, sizeof e);
  ::_exit(127);
}

// A started command: its process group is killed (SIGKILL) and the command reaped when this ends
// before the command did (an exception while waiting), so it never outlives the wait.
class Child {
 public:
  Child(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  ~Child() {
    if (output_fd_ >= 0) ::close(output_fd_);
    if (!reaped_) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int output_fd() const { return output_fd_; }
  void close_output() {
    ::close(output_fd_);
    output_fd_ = -1;
  }
  // Whether the command has ended, without waiting and without reaping it: until it is reaped,
  // its zombie keeps the process group's id, so no other group can be signalled by it.
  bool ended() const {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) return false;
      throw RuntimeFailure(std::string("waitid: ") + std::strerror(errno));
    }
    return info.si_pid == pid_;
  }
  // The status of an ended command; it is reaped.
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR) throw RuntimeFailure(std::string("waitpid: ") + std::strerror(errno));
    }
    reaped_ = true;
    return status;
  }
  void signal_group(int signal) const { ::kill(-pid_, signal); }

 private:
  pid_t pid_;
  int output_fd_;
  bool reaped_ = false;
};

// The guard of a command's process group against a `kill -9` of the tool: PR_SET_PDEATHSIG ends
// only the command itself, and what it started (torchrun's ranks, a launcher's workers) would go
// on training and writing into the audit folder (issue 61). A small forked process blocks reading
// a pipe whose only writer is the tool; when the tool ends in any way the kernel closes the pipe,
// the read returns, and the guard kills the whole group. When the wait ends normally the tool
// kills the guard first (it must never act on a group already gone: its id could be reused).
class GroupGuard {
 public:
  explicit GroupGuard(pid_t group) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
    pid_ = ::fork();
    if (pid_ == 0) guard(fds[0], group);
    ::close(fds[0]);
    if (pid_ < 0) {
      ::close(fds[1]);
      throw RuntimeFailure("fork: " + std::string(strerror(errno)));
    }
    write_fd_ = fds[1];
  }
  ~GroupGuard() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(write_fd_);
  }
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

 private:
  // The guard between fork and its end: async-signal-safe calls only. It keeps nothing of the
  // tool's open (its pipe's read end as stdin), ignores the terminal's signals (the tool forwards
  // them), and waits for the pipe to close.
  [[noreturn]] static void guard(int read_fd, pid_t group) {
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(signal, SIG_IGN);
    if (::dup2(read_fd, STDIN_FILENO) < 0) ::_exit(1);
    ::close_range(STDIN_FILENO + 1, ~0U, 0);  // the tool's files, the pipe's write end too
    char byte = 0;
    while (::read(STDIN_FILENO, &byte, 1) < 0 && errno == EINTR) {
    }
    ::kill(-group, SIGKILL);
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int write_fd_ = -1;
};

// Starts the command; InputError when it cannot be executed.
pid_t start(const std::vector<std::string>& argv,
            const std::vector<std::pair<std::string, std::string>>& environment, int& output_fd) {
  if (argv.empty()) throw InputError("no command to run");
  const std::string program = resolve_program(argv[0]);
  std::vector<std::string> args = argv, env = environment_text(environment);
  std::vector<char*> argp = pointers(args), envp = pointers(env);
  int output[2], error[2];
  if (::pipe2(output, O_CLOEXEC) != 0)
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  if (::pipe2(error, O_CLOEXEC) != 0) {
    ::close(output[0]);
    ::close(output[1]);
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(program.c_str(), argp.data(), envp.data(), output[1], error[1], parent);
  ::close(output[1]);
  ::close(error[1]);
  if (pid < 0) {
    ::close(output[0]);
    ::close(error[0]);
    throw RuntimeFailure("fork: " + std::string(strerror(errno)));
  }
  ::setpgid(pid, pid);  // also here: no signal to the group may miss it before the child ran
  int child_errno = 0;
  ssize_t n = 0;
  while ((n = ::read(error[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  ::close(error[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    ::close(output[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw InputError("cannot run '" + argv[0] + "': " + std::strerror(child_errno));
  }
  output_fd = output[0];
  return pid;
}

// Moves what the command printed into the log: whatever is there now (non-blocking), or what comes
// within `wait_ms`. Returns false once the output is closed (every writer of the group ended).
bool pump(Child& child, LogRing& log, int wait_ms) {
  pollfd p{child.output_fd(), POLLIN, 0};
  const int ready = ::poll(&p, 1, wait_ms);
  if (ready <= 0) return true;
  char buffer[65536];
  const ssize_t n = ::read(child.output_fd(), buffer, sizeof buffer);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  log.write(std::string_view(buffer, static_cast<std::size_t>(n)));
  return true;
}

// Drains the output left once the command has ended: what it wrote before it exited (for at most
// a second: members of its group that go on writing are not waited for).
void drain(Child& child, LogRing& log) {
  ::fcntl(child.output_fd(), F_SETFL, ::fcntl(child.output_fd(), F_GETFL) | O_NONBLOCK);
  const Clock::time_point until = Clock::now() + std::chrono::seconds(1);
  while (Clock::now() < until && pump(child, log, 0)) {
    pollfd p{child.output_fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) break;
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string ProcessResult::describe() const {
  std::string how =
      signal != 0 ? "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")"
                  : "exit status " + std::to_string(exit_code);
  if (timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", timeout_seconds);
    return "timed out after " + std::string(limit) + " s (--timeout) and was stopped: " + how;
  }
  if (forwarded != 0) {
    return "was stopped: repro-audit received signal " + std::to_string(forwarded) + " (" +
           strsignal(forwarded) + ") and passed it on; " + how;
  }
  return how;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& environment,
                          const std::filesystem::path& log_path, const ProcessLimits& limits) {
  LogRing log(log_path, limits.log_bytes);
  int output_fd = -1;
  const pid_t pid = start(argv, environment, output_fd);
  Child child(pid, output_fd);
  const GroupGuard guard(pid);  // destroyed first: the group is killed and reaped after it
  ProcessResult result;
  result.timeout_seconds = limits.timeout_seconds;
  const Clock::time_point started = Clock::now();
  std::optional<Clock::time_point> kill_at;  // SIGTERM sent: SIGKILL from then on
  bool output_open = true;
  while (!child.ended()) {
    output_open = output_open ? pump(child, log, 50) : (::poll(nullptr, 0, 50), false);
    const auto stop = [&](int signal) {
      child.signal_group(signal);
      kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(limits.grace_seconds));
    };
    if (limits.timeout_seconds > 0 && !result.timed_out &&
        seconds_since(started) > limits.timeout_seconds) {
      result.timed_out = true;
      if (!kill_at) stop(SIGTERM);
    }
    if (const int received = StopSignals::received(); received != 0 && !result.forwarded) {
      result.forwarded = received;
      if (!kill_at) stop(received);
    }
    if (kill_at && Clock::now() > *kill_at) child.signal_group(SIGKILL);
  }
  if (output_open) drain(child, log);
  child.signal_group(SIGKILL);  // what the command left running in its group ends with it
  const int status = child.reap();
  child.close_output();
  log.finish();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string last_lines(const std::filesystem::path& file, std::size_t lines) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 65536 ? size - 65536 : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::size_t at = text.size(), found = 0;
  while (at > 0 && found < lines) {
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) {
      at = 0;
      break;
    }
    ++found;
  }
  return text.substr(at == 0 ? 0 : at + 1);
}

std::string last_lines_joined(const std::filesystem::path& file, std::size_t lines) {
  std::string tail = last_lines(file, lines);
  for (std::size_t at = tail.find('\n'); at != std::string::npos; at = tail.find('\n', at)) {
    tail.replace(at, 1, " | ");
  }
  return tail;
}

}  // namespace ra
