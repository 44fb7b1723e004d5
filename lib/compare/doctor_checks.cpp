// The registry of the doctor's checks and the report they make of one run
// (compare/doctor_checks.h).
#include "compare/doctor_checks.h"

namespace ra::compare {

const std::vector<DoctorCheck>& doctor_checks() {
  static const std::vector<DoctorCheck> checks = {
      {"seeds", doctor_seeds},   {"switch", doctor_switches}, {"precision", doctor_precision},
      {"loader", doctor_loader}, {"op", doctor_ops},          {"cudnn", doctor_cudnn},
  };
  return checks;
}

std::vector<Finding> doctor_findings(const trace::Trace& t) {
  std::vector<Finding> findings;
  for (const DoctorCheck& c : doctor_checks()) {
    for (Finding& f : c.evaluate(t)) {
      f.id = c.id;
      f.data["kind"] = c.id;
      findings.push_back(std::move(f));
    }
  }
  return findings;
}

DoctorReport doctor_report(const trace::Trace& t, std::string name, std::filesystem::path trace) {
  DoctorReport r;
  r.name = std::move(name);
  r.trace = std::move(trace);
  const nlohmann::json& env = t.header.environment;
  r.device = env.contains("gpu") && env["gpu"].is_string() ? env["gpu"].get<std::string>() : "cpu";
  r.steps = static_cast<std::int64_t>(t.steps.size());
  for (const trace::StepRecord& s : t.steps) r.steps_with_ops += s.ops_recorded ? 1 : 0;
  r.findings = doctor_findings(t);
  return r;
}

}  // namespace ra::compare
