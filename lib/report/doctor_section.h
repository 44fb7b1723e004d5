#pragma once
// The forms of `repro-audit doctor`'s report (docs/doctor.md): the findings of the doctor's
// checks on one run (compare/doctor_checks.h), its text and its `--json` document side by side,
// as a section file of report/sections.h holds one finding's forms, but of the doctor's report,
// not of a comparison. Each keeps the layout doctor printed before its findings were findings
// (tests/report/golden/doctor_*). Neither decides a verdict: the exit status each names is
// compare::findings_exit_code over the findings.
#include <string>

#include <nlohmann/json.hpp>

#include "compare/doctor_checks.h"

namespace ra::report {

std::string doctor_text(const compare::DoctorReport& r);
// {"doctor_version": 1, "name", "trace", "device", "steps", "steps_with_ops", "clear",
//  "findings": [{"kind", "what", "fix"}]}
nlohmann::json doctor_json(const compare::DoctorReport& r);

}  // namespace ra::report
