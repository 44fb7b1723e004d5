// The text and JSON forms of `repro-audit doctor`'s report (report/doctor_section.h).
#include "report/doctor_section.h"

#include "core/printable.h"

namespace ra::report {

std::string doctor_text(const compare::DoctorReport& r) {
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
  for (const compare::Finding& f : r.findings) {
    const compare::DoctorFacts& facts = *compare::doctor_facts(f);
    out +=
        "  [" + f.id + "] " + printable(facts.what) + "\n      fix: " + printable(facts.fix) + "\n";
  }
  return out + "trace: " + printable(r.trace.string()) + "\n";
}

nlohmann::json doctor_json(const compare::DoctorReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const compare::Finding& f : r.findings) findings.push_back(f.data);
  return {{"doctor_version", 1},
          {"name", r.name},
          {"trace", r.trace.string()},
          {"device", r.device},
          {"steps", r.steps},
          {"steps_with_ops", r.steps_with_ops},
          {"clear", compare::findings_exit_code(r.findings) == 0},
          {"findings", std::move(findings)}};
}

}  // namespace ra::report
