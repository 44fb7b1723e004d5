// `repro-audit doctor`: the run and its report (audit/doctor.h).
#include "audit/doctor.h"

#include "audit/exec_audit.h"
#include "core/printable.h"
#include "trace/trace_io.h"

namespace ra::audit {

DoctorReport run_doctor(const DoctorOptions& o, const AuditProgress& progress) {
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
  DoctorReport r;
  r.name = o.name;
  r.trace = result.trace_files.at(0);
  const trace::Trace t = trace::read_trace(r.trace);
  const nlohmann::json& env = t.header.environment;
  r.device = env.contains("gpu") && env["gpu"].is_string() ? env["gpu"].get<std::string>() : "cpu";
  r.steps = static_cast<std::int64_t>(t.steps.size());
  for (const trace::StepRecord& s : t.steps) r.steps_with_ops += s.ops_recorded ? 1 : 0;
  r.findings = compare::doctor_findings(t);
  return r;
}

std::string doctor_text(const DoctorReport& r) {
  const std::size_t n = r.findings.size();
  std::string out = "repro-audit doctor: " + printable(r.name) + ", 1 run on " +
                    printable(r.device) + ", " + std::to_string(r.steps) +
                    " steps recorded (the ops of " + std::to_string(r.steps_with_ops) + ")\n";
  if (n == 0) {
    return out +
           "NOTHING IN THE WAY of identical runs that this run shows: seeds applied, "
           "switches set, no op nondeterministic on CUDA among the recorded ones (exit 0)\n";
  }
  out +=
      std::to_string(n) + (n == 1 ? " obstacle" : " obstacles") + " to identical runs (exit 1):\n";
  for (const compare::DoctorFinding& f : r.findings) {
    out += "  [" + f.kind + "] " + printable(f.what) + "\n      fix: " + printable(f.fix) + "\n";
  }
  return out + "trace: " + printable(r.trace.string()) + "\n";
}

nlohmann::json doctor_json(const DoctorReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const compare::DoctorFinding& f : r.findings) {
    findings.push_back({{"kind", f.kind}, {"what", f.what}, {"fix", f.fix}});
  }
  return {{"doctor_version", 1},       {"name", r.name},
          {"trace", r.trace.string()}, {"device", r.device},
          {"steps", r.steps},          {"steps_with_ops", r.steps_with_ops},
          {"clear", r.clear()},        {"findings", std::move(findings)}};
}

}  // namespace ra::audit
