// `repro-audit doctor`: the run (audit/doctor.h); its report is report/doctor_section.cpp.
#include "audit/doctor.h"

#include "audit/exec_audit.h"
#include "trace/trace_io.h"

namespace ra::audit {

compare::DoctorReport run_doctor(const DoctorOptions& o, const AuditProgress& progress) {
  ExecOptions e;
  e.command = o.command;
  e.name = o.name;
  e.runs = 1;
  e.seed = o.seed;
  e.out_dir = o.out_dir;
  e.expect_identical = false;  // one run: nothing is compared
  e.tool_version = o.tool_version;
  e.trace_ops = trace::OpWindow{0, o.steps};
  e.device_digest_library = o.device_digest_library;
  e.timeout_seconds = o.timeout_seconds;
  const AuditResult result = run_exec_audit(e, progress);
  const std::filesystem::path trace = result.trace_files.at(0);
  return compare::doctor_report(trace::read_trace(trace), o.name, trace);
}

}  // namespace ra::audit
