// `repro-audit compare TRACE... | DIR`: the report of an audit from trace files made anywhere, or
// of the runs an audit folder's manifest names (missing runs and foreign files named).
#include <filesystem>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "cli_help.h"
#include "commands.h"
#include "option_checks.h"
#include "report_output.h"
#include "rundir/report_paths.h"

namespace ra::app {
namespace {

struct CompareOptions {
  std::vector<std::string> inputs;
  std::string json_path;
  std::string junit_path;
  std::string html_path;
  std::string expect;
  double tolerance = 1e-4;
  bool no_magnitude = false;
  bool allow_empty = false;
  bool align = false;
  double floor_margin = 10.0;
};

int run_compare(const CompareOptions& o) {
  const std::vector<std::filesystem::path> inputs(o.inputs.begin(), o.inputs.end());
  rundir::ReportPathContext context;
  for (const std::filesystem::path& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      context.audit_folders.push_back(input);
    } else {
      context.inputs.push_back(input);
      context.audit_folders.push_back(input.parent_path().empty() ? "." : input.parent_path());
    }
  }
  rundir::check_report_paths({o.json_path, o.junit_path, o.html_path}, context);
  audit::AuditComparisonOptions options;
  // Without --expect: the audit's expectation (its manifest's); for trace files named alone,
  // identity when every trace says it ran fully deterministic.
  options.expect_identical = parse_expect(o.expect);
  options.expect_equivalent = o.expect == "equivalent";
  options.equivalence_margin = o.floor_margin;
  options.loss_tolerance = o.tolerance;
  options.measure_magnitudes = !o.no_magnitude;
  options.allow_empty = o.allow_empty;
  options.align = o.align;
  return emit_report(audit::compare_inputs(inputs, options),
                     {o.json_path, o.junit_path, o.html_path});
}

}  // namespace

void register_compare(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare trace files (or folders of them)");
  cmd->footer(exit_codes_text());
  cmd->add_option("traces", o->inputs,
                  "Trace files (*.trace.jsonl) or audit folders (their audit.json's runs)")
      ->required();
  cmd->add_option("--json", o->json_path, "Also write the JSON report to FILE ('-': stdout only)");
  cmd->add_option("--html", o->html_path,
                  "Also write the HTML report to FILE: one self-contained page with plots");
  cmd->add_option("--junit", o->junit_path,
                  "Also write a JUnit XML report to FILE, for CI test-report readers (docs/ci.md)");
  cmd->add_option("--expect", o->expect,
                  "identical: exit 1 unless bitwise identical; any: never exit 1; equivalent: "
                  "the traces are two programs A and B and perturbed runs of A, and B must stay "
                  "within the floor those measure (docs/equivalence.md) (default: the audit's, "
                  "from its folder's manifest; for trace files, the default of the command that "
                  "made them: identical for exec's runs, and for the engine's when every run was "
                  "fully deterministic)")
      ->check(CLI::IsMember({"identical", "any", "equivalent"}));
  cmd->add_option("--floor-margin", o->floor_margin,
                  "With --expect equivalent: B is beyond the floor where its loss's distance from "
                  "A's exceeds this many floors")
      ->check(finite_positive_number());
  cmd->add_option("--tolerance", o->tolerance, "Relative tolerance of the within-tolerance verdict")
      ->check(finite_positive_number());
  cmd->add_flag("--allow-empty", o->allow_empty,
                "Exit 0, not 5, when nothing was compared (fewer than two same-seed runs)");
  cmd->add_flag("--align", o->align,
                "The two traces are of two programs that should compute the same (a manual "
                "LayerNorm and nn.LayerNorm): align their op records (--trace-ops) by module and "
                "op, and name where the programs part (docs/equivalence.md)");
  cmd->add_flag("--no-magnitude", o->no_magnitude,
                "Do not measure how much a root-cause op's outputs differ (a replay of the "
                "reference run to the op, executing it until each run's outputs reappear)");
  cmd->callback([&run, o] { run = [o] { return run_compare(*o); }; });
}

}  // namespace ra::app
