// The batch-invariance sweep's options and report (invariance_cli.h).
#include "invariance_cli.h"

#include "compare/invariance_finding.h"
#include "core/error.h"
#include "json_output.h"
#include "report/findings_report.h"

namespace ra::app {

void add_invariance_options(CLI::App& cmd, InvarianceCli& o) {
  cmd.add_flag("--invariance", o.enabled,
               "Audit batch invariance instead: does one sample's output depend on the batch it "
               "sits in? A sweep of batch sizes and anchor positions against the sample alone, "
               "with a one-ULP control (docs/invariance.md)");
  cmd.add_option("--sizes", o.sizes,
                 "With --invariance: the batch sizes, as 1-64,128,255-257 (default: 1..16 and "
                 "each power of two and its neighbours up to --max-size)");
  cmd.add_option("--max-size", o.max_size, "With --invariance: the largest default batch size")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--positions", o.positions,
                 "With --invariance: where the sample sits in each batch")
      ->delimiter(',')
      ->check(CLI::IsMember({"first", "middle", "last"}));
  cmd.add_option("--neighbours", o.neighbours,
                 "With --invariance: what fills the other rows: batch (the batch's other "
                 "samples), noise (seeded noise of the batch's scale)")
      ->delimiter(',')
      ->check(CLI::IsMember({"batch", "noise"}));
  cmd.add_flag("--no-control", o.no_control,
               "With --invariance: no one-ULP control; an invariant sweep is then inconclusive "
               "(exit 6)");
}

trace::InvariancePlan invariance_plan(const InvarianceCli& o) {
  trace::InvariancePlan plan;
  plan.sizes = o.sizes.empty() ? trace::default_invariance_sizes(o.max_size)
                               : trace::parse_invariance_sizes(o.sizes);
  plan.positions = o.positions;
  plan.neighbours = o.neighbours;
  plan.control = !o.no_control;
  if (plan.sizes.size() < 2) {
    throw InputError(
        "--sizes: a sweep needs a batch size above 1 to compare the sample alone with");
  }
  return plan;
}

void refuse_with_invariance(const CLI::App& cmd, const std::vector<std::string>& options) {
  refuse_options(cmd, options, "--invariance runs one sweep, not an audit of runs");
}

void refuse_options(const CLI::App& cmd, const std::vector<std::string>& options,
                    const std::string& why) {
  std::string given;
  for (const std::string& name : options) {
    if (cmd.count(name) > 0) given += (given.empty() ? "" : ", ") + name;
  }
  if (!given.empty()) throw InputError(why + ": " + given + " does not apply to it");
}

int emit_invariance_report(const trace::InvarianceSweep& sweep, bool expect_invariant,
                           const std::string& rerun_command, const ReportFiles& files) {
  report::FindingsReport r;
  r.title = "batch invariance of " + (sweep.model.empty() ? "the model" : sweep.model) + " (" +
            sweep.source + ")";
  r.properties = {{"device", sweep.device}, {"output dtype", sweep.dtype}};
  if (!sweep.mode.empty()) r.properties.emplace_back("mode", sweep.mode);
  r.findings.push_back(compare::invariance_finding(compare::analyse_invariance(sweep),
                                                   {expect_invariant, rerun_command}));
  write_report_forms(files, {json_text(report::findings_json(r)) + "\n",
                             [&] { return report::render_findings_junit(r); },
                             [&] { return report::render_findings_html(r); },
                             [&] { return report::render_findings_text(r); }});
  return compare::findings_exit_code(r.findings);
}

}  // namespace ra::app
