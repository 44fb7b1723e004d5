// Every case of the op table on the CPU backend, at every instruction set this CPU runs and on 1,
// 2 and 3 threads: one test per instruction set ("ops: every op on the CPU at avx2-fma"), one
// section per op (run one with -c conv2d_forward).
//
// The backend picks its instruction set once per process, from REPRO_AUDIT_ISA, at its first
// GEMM. The first of these tests in a process sets that variable and runs in-process (under CTest
// every test is a process of its own); a later one at another instruction set runs itself again
// in a child process (the executable loads the CUDA libraries: ~1 s per process, so one child per
// instruction set, not per op).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>

#include "backend/cpu/cpu_ops.h"
#include "ops/harness.h"

namespace ops_test {
namespace {

constexpr int kThreadCounts[] = {1, 2, 3};

// The op's cases in this process: against the reference in each mode and thread count; in
// deterministic and batch-invariant mode (and for ops without a mode) the same bits for every
// thread count and on a repeated call.
void run_cases_here(const std::string& op, const std::string& isa) {
  INFO("instruction set " << isa);
  REQUIRE(process_instruction_set() == isa);
  std::vector<std::unique_ptr<ra::backend::cpu::CpuOps>> backends;
  for (const int threads : kThreadCounts) {
    backends.push_back(std::make_unique<ra::backend::cpu::CpuOps>(threads));
  }
  for (const OpCase* c : cases_of(op)) {
    INFO(op << " [" << c->shape << "]");
    const Arrays arrays = c->arrays();
    const Expected expected = c->reference(arrays);
    std::vector<KernelMode> modes{KernelMode::deterministic};
    if (c->takes_mode) {
      modes.push_back(KernelMode::nondeterministic);
      modes.push_back(KernelMode::batch_invariant);
    }
    for (const KernelMode mode : modes) {
      std::optional<Arrays> first;
      for (const auto& ops : backends) {
        INFO(ra::backend::to_string(mode) << ", " << ops->threads() << " threads");
        const Arrays out = run_case(*ops, *c, arrays, mode);
        require_matches_reference(out, expected, false);
        if (mode == KernelMode::nondeterministic) continue;  // atomics: bits may differ
        require_same_bits(out, run_case(*ops, *c, arrays, mode), expected);
        if (first) {
          require_same_bits(out, *first, expected);
        } else {
          first = out;
        }
      }
    }
  }
}

// This executable, run with the test of `op` at the instruction set `isa`: its exit status and
// output.
std::pair<int, std::string> run_child(const std::string& test_name, const InstructionSet& isa) {
  std::array<char, 4096> self{};
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  REQUIRE(length > 0);
  // REPRO_AUDIT_GEMM (the old name) emptied: set to another value it would conflict.
  const std::string command = "REPRO_AUDIT_GEMM= REPRO_AUDIT_ISA=" + isa.env_value + " '" +
                              std::string(self.data(), std::size_t(length)) + "' '" + test_name +
                              "' 2>&1";
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

// The instruction set this process's CPU ops run at, once a test of this file has fixed it.
std::optional<std::string>& fixed_instruction_set() {
  static std::optional<std::string> fixed;
  return fixed;
}

void run_at(const InstructionSet& isa) {
  if (!fixed_instruction_set()) {
    // Before the backend's first GEMM: the variable decides.
    REQUIRE(setenv("REPRO_AUDIT_ISA", isa.env_value.c_str(), 1) == 0);
    REQUIRE(unsetenv("REPRO_AUDIT_GEMM") == 0);  // the old name, which would conflict
    fixed_instruction_set() = isa.name;
  }
  if (*fixed_instruction_set() == isa.name) {
    for (const std::string& op : op_names()) {
      DYNAMIC_SECTION(op) {
        run_cases_here(op, isa.name);
      }
    }
    return;
  }
  const auto [status, output] = run_child(Catch::getResultCapture().getCurrentTestName(), isa);
  INFO("child at " << isa.name << " exited " << status << ":\n" << output);
  REQUIRE(status == 0);
  REQUIRE(output.find("All tests passed") != std::string::npos);
  REQUIRE(output.find(" in 1 test case") != std::string::npos);
}

// One test per instruction set this CPU runs.
bool register_instruction_set_tests() {
  static std::deque<std::string> names;
  static std::deque<InstructionSet> isas;
  static std::deque<Catch::AutoReg> registrations;
  for (const InstructionSet& isa : supported_instruction_sets()) {
    isas.push_back(isa);
    names.push_back("every op on the CPU at " + isa.name);
    registrations.emplace_back(Catch::makeTestInvoker(+[] {
                                 const std::string name =
                                     Catch::getResultCapture().getCurrentTestName();
                                 for (const InstructionSet& i : isas) {
                                   if (name == "every op on the CPU at " + i.name) run_at(i);
                                 }
                               }),
                               CATCH_INTERNAL_LINEINFO, Catch::StringRef(),
                               Catch::NameAndTags{names.back().c_str(), "[ops][cpu]"});
  }
  return true;
}

const bool registered = register_instruction_set_tests();

}  // namespace
}  // namespace ops_test
