// The registry of sections (report/sections.h) and the JSON report they complete.
#include "report/sections.h"

namespace ra::report {

const Section* section_of(const compare::Finding& f) {
  static const Section sections[] = {
      {"resume", resume_text, resume_html, resume_cases, resume_json},
      {"data_parallel", data_parallel_text, data_parallel_html, data_parallel_cases,
       data_parallel_json},
  };
  if (!f.own_section) return nullptr;
  for (const Section& s : sections) {
    if (f.id == s.id) return &s;
  }
  return nullptr;
}

nlohmann::json render_json(const compare::ComparisonResult& r) {
  nlohmann::json report = compare::to_json(r);
  for (const compare::Finding& f : r.findings) {
    if (const Section* s = section_of(f)) s->json(r, f, report);
  }
  return report;
}

}  // namespace ra::report
