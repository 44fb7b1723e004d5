#pragma once
// `repro-audit doctor -- CMD` (docs/doctor.md): one run of the user's command, recorded by the
// PyTorch recorder with the op records of its first steps (and, on a GPU, cuDNN's log), then every
// obstacle to identical runs that run shows, each with its fix: seeds not applied or overridden,
// determinism switches unset, loader workers that share a random stream, ops that ran and are
// nondeterministic on the device they ran on (or on CUDA, when the run was on the CPU), cuDNN
// engines cuDNN marks nondeterministic. The findings are a pure function of the run's trace
// (compare/doctor_checks.h: the doctor's registered checks), tested on traces made in memory;
// run_doctor runs the command as exec does.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "audit/audit_options.h"
#include "compare/doctor_checks.h"
#include "trace/trace.h"

namespace ra::audit {

struct DoctorOptions {
  std::vector<std::string> command;
  std::string name;
  std::filesystem::path out_dir;
  std::int64_t steps = 2;  // the steps whose ops are recorded, from 0
  // Not 42, 0, 1, 1234 or 3407, the seeds scripts write: a script that seeds torch again with
  // one of those after seed_everything must show (issue 61: 42 hid `torch.manual_seed(42)`).
  std::uint64_t seed = 73910541;
  double timeout_seconds = 0.0;
  std::filesystem::path device_digest_library;
  std::string tool_version = "unknown";
};

// Runs the command once (exec's environment, folder rules and failures: a run that fails is a
// RuntimeFailure) and reads its trace: the doctor's checks' findings of it. Its exit status is
// compare::findings_exit_code over them.
compare::DoctorReport run_doctor(const DoctorOptions& o, const AuditProgress& progress = {});

}  // namespace ra::audit
