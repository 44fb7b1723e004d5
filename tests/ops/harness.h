#pragma once
// Runs the op table's cases on a backend and checks them: every output against the reference
// within its tolerance, and (deterministic modes, ops without a mode) bit for bit against the
// same case on another thread count or a repeated call.
#include <string>
#include <vector>

#include "ops/op_case.h"

namespace ops_test {

// ---- instruction sets ----
// The CPU backend picks its instruction set once per process, from REPRO_AUDIT_ISA (else the
// best this CPU runs). The harness therefore runs each CPU case in a child process per
// instruction set. The only place that names the selector's API: change it here when it moves.
struct InstructionSet {
  std::string env_value;  // what REPRO_AUDIT_ISA takes: "portable", "avx2", "avx512"
  std::string name;       // what the process reports once chosen: "portable", "avx2-fma", ...
};
std::vector<InstructionSet> supported_instruction_sets();
std::string process_instruction_set();

// ---- running and checking ----
std::vector<const OpCase*> cases_of(const std::string& op);
// The case's arrays after one call of its op on `ops` in `mode`.
Arrays run_case(Ops& ops, const OpCase& c, const Arrays& arrays, KernelMode mode);
// REQUIREs every output of the reference to be within its tolerance (autotuned: at least 1e-4 of
// its scale, see OpCase::autotuned_convolution); the failure names the worst element.
void require_matches_reference(const Arrays& actual, const Expected& expected,
                               bool autotuned_convolution);
// REQUIREs the outputs (the reference's names) to have the same bits in both runs.
void require_same_bits(const Arrays& a, const Arrays& b, const Expected& outputs);

}  // namespace ops_test
