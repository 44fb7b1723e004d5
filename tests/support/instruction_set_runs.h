#pragma once
// A test's checks at every instruction set this CPU runs (tests/README.md: the engine's bits
// depend on it). The CPU backend fixes its instruction set once per process, from REPRO_AUDIT_ISA,
// at its first use, so a section per instruction set runs where the variable already names it
// (this process was started that way, by CTest's environment or by the call below) and otherwise
// runs again in a child process of this executable: the current test case, that section alone,
// under REPRO_AUDIT_ISA. The op table (tests/ops/cpu_ops_test.cpp) does the same per op.
#include <sys/wait.h>

#include <unistd.h>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/simd/isa.h"

namespace ra::test {

struct InstructionSet {
  std::string env_value;  // what REPRO_AUDIT_ISA takes: "portable", "avx2", "avx512"
  std::string name;       // what the backend reports: "portable", "avx2-fma", "avx512-fma"
};

inline std::vector<InstructionSet> instruction_sets_of_this_cpu() {
  using ra::backend::cpu::Isa;
  const std::pair<Isa, const char*> all[] = {
      {Isa::portable, "portable"}, {Isa::avx2_fma, "avx2"}, {Isa::avx512_fma, "avx512"}};
  std::vector<InstructionSet> supported;
  for (const auto& [isa, env_value] : all) {
    if (ra::backend::cpu::isa_supported(isa)) {
      supported.push_back({env_value, ra::backend::cpu::isa_name(isa)});
    }
  }
  return supported;
}

// `text` as one word of sh: in single quotes, each of its own ending the quote ('\'').
inline std::string shell_quoted(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// This executable, run with `arguments` (quoted for sh) under REPRO_AUDIT_ISA=`isa`: its exit
// status and output.
inline std::pair<int, std::string> run_self_at(const InstructionSet& isa,
                                               const std::string& arguments) {
  std::array<char, 4096> self{};
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  REQUIRE(length > 0);
  // REPRO_AUDIT_GEMM (the old name) emptied: set to another value it would conflict.
  const std::string command = "REPRO_AUDIT_GEMM= REPRO_AUDIT_ISA=" + isa.env_value + " " +
                              shell_quoted(std::string(self.data(), std::size_t(length))) + " " +
                              arguments + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) {
    output.append(buffer.data(), n);
  }
  const int status = pclose(pipe.release());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// One DYNAMIC_SECTION per instruction set of this CPU, named by it, each running `checks` at that
// instruction set: here, or in a child that runs only that section of the current test (whose
// name must hold no ',' or '[', which Catch's filter would read as syntax).
inline void at_every_instruction_set(const std::function<void()>& checks) {
  for (const InstructionSet& isa : instruction_sets_of_this_cpu()) {
    DYNAMIC_SECTION(isa.name) {
      const char* chosen = std::getenv("REPRO_AUDIT_ISA");
      if (chosen != nullptr && isa.env_value == chosen) {
        REQUIRE(std::string(ra::backend::cpu::active_isa_name()) == isa.name);
        checks();
      } else {
        const std::string test = Catch::getResultCapture().getCurrentTestName();
        const auto [status, output] =
            run_self_at(isa, shell_quoted(test) + " -c " + shell_quoted(isa.name));
        INFO("child at " << isa.name << " exited " << status << ":\n" << output);
        REQUIRE(status == 0);
        REQUIRE(output.find("All tests passed") != std::string::npos);
      }
    }
  }
}

}  // namespace ra::test
