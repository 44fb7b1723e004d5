// The registry of sections (report/sections.h) and the JSON report they complete.
#include "report/sections.h"

#include "report/finding_forms.h"

namespace ra::report {

const Section* section_of(const compare::Finding& f) {
  static const Section sections[] = {
      {"resume", TextPlace::findings, resume_text, HtmlPlace::findings, resume_html, resume_cases,
       nullptr, resume_json},
      {"data_parallel", TextPlace::findings, data_parallel_text, HtmlPlace::findings,
       data_parallel_html, data_parallel_cases, nullptr, data_parallel_json},
      {"loader_workers", TextPlace::after_next_step, loader_workers_text,
       HtmlPlace::divergence_block, loader_workers_text, nullptr, nullptr, loader_workers_json},
      {"environment", TextPlace::after_audit_folders, environment_text, HtmlPlace::after_statistics,
       environment_html, nullptr, nullptr, environment_json},
      {"instability", TextPlace::after_seed_groups, instability_text,
       HtmlPlace::after_seed_group_plots, instability_html, nullptr, instability_properties,
       instability_json},
      {"step_launches", TextPlace::after_cost, step_launches_text, HtmlPlace::findings, nullptr,
       nullptr, nullptr, step_launches_json},
      {"warnings", TextPlace::after_verdict, warnings_text, HtmlPlace::after_banner, warnings_html,
       nullptr, nullptr, warnings_json},
  };
  if (!f.own_section) return nullptr;
  for (const Section& s : sections) {
    if (f.id == s.id) return &s;
  }
  return nullptr;
}

std::string findings_text(const compare::ComparisonResult& r, TextPlace place) {
  std::string out;
  for (const compare::Finding& f : r.findings) {
    const Section* s = section_of(f);
    if (s != nullptr && s->text_place == place) out += s->text(r, f);
    if (s == nullptr && place == TextPlace::findings) out += finding_text(f);
  }
  return out;
}

std::string findings_html(const compare::ComparisonResult& r, HtmlPlace place) {
  std::string out;
  for (const compare::Finding& f : r.findings) {
    const Section* s = section_of(f);
    if (s != nullptr && s->html != nullptr && s->html_place == place) out += s->html(r, f);
    if (s == nullptr && place == HtmlPlace::findings) out += finding_html(f);
  }
  return out;
}

nlohmann::json render_json(const compare::ComparisonResult& r) {
  nlohmann::json report = compare::to_json(r);
  for (const compare::Finding& f : r.findings) {
    if (const Section* s = section_of(f)) s->json(r, f, report);
  }
  return report;
}

}  // namespace ra::report
