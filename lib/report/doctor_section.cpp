// The text and JSON forms of `repro-audit doctor`'s report (report/doctor_section.h).
#include "report/doctor_section.h"

#include <vector>

#include "core/printable.h"

namespace ra::report {

namespace {

// "  [kind] what\n      fix: fix\n" for each finding, in the registry's order.
std::string finding_lines(const std::vector<const compare::Finding*>& findings) {
  std::string out;
  for (const compare::Finding* f : findings) {
    const compare::DoctorFacts& facts = *compare::doctor_facts(*f);
    out += "  [" + f->id + "] " + printable(facts.what) + "\n      fix: " + printable(facts.fix) +
           "\n";
  }
  return out;
}

}  // namespace

// The obstacles are the failed findings; the other findings (precision notes, allowed) are
// listed as notes after them: a note is no obstacle to identical runs and is never counted as one.
// The exit status the text names is the one the process returns (findings_exit_code).
std::string doctor_text(const compare::DoctorReport& r) {
  std::vector<const compare::Finding*> obstacles, notes;
  for (const compare::Finding& f : r.findings) {
    (f.outcome == compare::CheckOutcome::failed ? obstacles : notes).push_back(&f);
  }
  const std::string exit = "(exit " + std::to_string(compare::findings_exit_code(r.findings)) + ")";
  std::string out = "repro-audit doctor: " + printable(r.name) + ", 1 run on " +
                    printable(r.device) + ", " + std::to_string(r.steps) +
                    " steps recorded (the ops of " + std::to_string(r.steps_with_ops) + ")\n";
  const std::size_t n = obstacles.size(), m = notes.size();
  if (n == 0) {
    out +=
        "NOTHING IN THE WAY of identical runs that this run shows: seeds applied, switches set, "
        "no op nondeterministic on CUDA among the recorded ones " +
        exit + "\n";
    if (m == 0) return out;
  } else {
    out += std::to_string(n) + (n == 1 ? " obstacle" : " obstacles") + " to identical runs " +
           exit + ":\n" + finding_lines(obstacles);
  }
  if (m > 0) {
    out += std::to_string(m) + (m == 1 ? " note, no obstacle" : " notes, no obstacles") +
           " to identical runs:\n" + finding_lines(notes);
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
