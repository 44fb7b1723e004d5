#pragma once
// What one PyTorch run's trace shows of the obstacles to identical runs (`repro-audit doctor`,
// docs/doctor.md): seeds not applied or overridden, determinism switches unset, loader workers that
// share a random stream, ops that ran and are nondeterministic on the device they ran on (or on
// CUDA, when the run was on the CPU), cuDNN engines cuDNN marks nondeterministic. A pure function
// of the trace, so it lives with the other analyses of traces; lib/audit's doctor runs the command.
#include <string>
#include <vector>

#include "trace/trace.h"

namespace ra::compare {

struct DoctorFinding {
  // "seeds", "switch", "loader", "op", "cudnn"; "precision": no obstacle to identical runs, a
  // difference from fp32 and between GPU generations (TF32 allowed on a GPU)
  std::string kind;
  std::string what;  // what stands in the way of identical runs
  std::string fix;   // what to change
};

// Every finding the trace of one PyTorch run shows, in the order above.
std::vector<DoctorFinding> doctor_findings(const trace::Trace& t);

// The aten op's base name ("index_add" for "aten.index_add_.default") when it is one of the ops
// PyTorch documents as nondeterministic on CUDA (docs/doctor.md has the table), with what makes it
// so and whether torch.use_deterministic_algorithms(True) gives it a deterministic kernel (else it
// raises); none otherwise.
struct CudaNondeterministicOp {
  const char* name;
  const char* when;  // "" or the condition ("with accumulate=True")
  bool has_deterministic_kernel;
};
const CudaNondeterministicOp* cuda_nondeterministic_op(const std::string& aten_op);

}  // namespace ra::compare
