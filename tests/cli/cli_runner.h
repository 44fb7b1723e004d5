#pragma once
// Runs the built repro-audit binary as a user would and captures exit code, stdout and stderr.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "support/file_text.h"

namespace ra::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A fresh temporary folder, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("repro-audit-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

// A path as one shell word (for run_cli's arguments; the tests' paths hold no single quote).
inline std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

// `args` is appended to the binary path as shell words (quote them yourself where needed).
inline CliResult run_cli(const std::string& args) {
  TempDir tmp;
  const auto out = tmp.path() / "stdout", err = tmp.path() / "stderr";
  const std::string command = std::string("'") + REPRO_AUDIT_BINARY + "' " + args + " >'" +
                              out.string() + "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

inline std::string source_path(const std::string& relative) {
  return std::string(REPRO_AUDIT_SOURCE_DIR) + "/" + relative;
}

}  // namespace ra::test
