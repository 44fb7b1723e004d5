#include "report/text_report.h"

#include "report/sections.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report {

// The sections in reading order (report/text_sections.h): the verdict and its explanation first,
// then how much the runs differ, then the statistics and cost after a blank line.
std::string render_text(const compare::ComparisonResult& r) {
  std::string out = text::header(r);
  out += text::verdict(r);
  out += findings_text(r, TextPlace::after_verdict);
  out += text::first_divergence(r);
  out += findings_text(r, TextPlace::findings);
  out += text::root_cause(r);
  out += text::next_step(r);
  out += findings_text(r, TextPlace::after_next_step);
  out += text::audit_folders(r);
  out += findings_text(r, TextPlace::after_audit_folders);
  out += text::category_table(r);
  out += text::loss_differences(r);
  out += text::growth_table(r);
  out += text::snapshots(r);
  out += "\n";
  out += text::seed_groups(r);
  out += findings_text(r, TextPlace::after_seed_groups);
  out += text::timing(r);
  out += findings_text(r, TextPlace::after_cost);
  return text::cut_long_lines(out);
}

}  // namespace ra::report
