#pragma once
// `repro-audit doctor`'s checks (docs/doctor.md) as findings (compare/finding.h; DESIGN.md,
// "Findings as data"): what one PyTorch run's trace shows of the obstacles to identical runs, each
// kind of obstacle a registered doctor check whose evaluation gives one finding per obstacle it
// sees (none: nothing of its kind in the way): seeds not applied or overridden, determinism
// switches unset, TF32 allowed (a precision note), loader workers that share a random stream, ops
// that ran and are nondeterministic on the device they ran on (or on CUDA, when the run was on the
// CPU), cuDNN engines cuDNN marks nondeterministic. The registry is the doctor's own, beside the
// comparison's (compare/checks.h): its checks read one run's trace, not a comparison of runs.
// The exit status is findings_exit_code over the findings (0: nothing in the way, 1: obstacles),
// and the doctor's forms (report/doctor_section.h) read the same findings: no reader decides a
// verdict of its own. A pure function of the trace, so it lives with the other analyses of
// traces; lib/audit's doctor runs the command.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "compare/finding.h"
#include "trace/trace.h"

namespace ra::compare {

// The typed evidence of a doctor check's finding (Finding::facts), in the words its forms show.
// Its kind is the finding's id, its check's ("seeds", "switch", "precision", "loader", "op",
// "cudnn"), and the JSON's "kind".
struct DoctorFacts {
  std::string what;  // what stands in the way of identical runs (a note: what differs)
  std::string fix;   // what to change
};
// The facts of a doctor check's finding, or null.
const DoctorFacts* doctor_facts(const Finding& f);

struct DoctorCheck {
  const char* id;  // the kind of obstacle: each of its findings' id, the JSON's "kind"
  std::vector<Finding> (*evaluate)(const trace::Trace&);
};

// In the order their findings are reported: seeds, switch, precision, loader, op, cudnn.
const std::vector<DoctorCheck>& doctor_checks();
// Every doctor check's findings of the trace of one PyTorch run, in the registry's order.
std::vector<Finding> doctor_findings(const trace::Trace& t);

// What doctor reports of one run: the run, and its findings.
struct DoctorReport {
  std::string name;             // the command's name (exec_name)
  std::filesystem::path trace;  // the run's trace
  std::string device;           // "cpu", or the GPU's name
  std::int64_t steps = 0;       // steps the run recorded
  std::int64_t steps_with_ops = 0;
  std::vector<Finding> findings;
};
// Its exit status is findings_exit_code(findings): 0 where nothing stands in the way (no finding,
// or precision notes only), 1 where an obstacle does.
DoctorReport doctor_report(const trace::Trace& t, std::string name, std::filesystem::path trace);

// The checks (compare/doctor_findings.cpp). An obstacle's finding fails, a precision note's is
// allowed (the reasons are there).
std::vector<Finding> doctor_seeds(const trace::Trace& t);
std::vector<Finding> doctor_switches(const trace::Trace& t);
std::vector<Finding> doctor_precision(const trace::Trace& t);
std::vector<Finding> doctor_loader(const trace::Trace& t);
std::vector<Finding> doctor_ops(const trace::Trace& t);
std::vector<Finding> doctor_cudnn(const trace::Trace& t);

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
