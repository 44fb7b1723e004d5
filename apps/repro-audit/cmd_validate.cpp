// `repro-audit validate SPEC`: checks a spec and prints the resolved model (per layer the output
// shape, parameters and forward FLOPs per sample; totals last).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "core/printable.h"
#include "data/dataset.h"
#include "json_output.h"
#include "spec/limits.h"
#include "spec/memory_plan.h"
#include "spec/parse.h"
#include "spec/resolve.h"

namespace ra::app {
namespace {

struct ValidateOptions {
  std::string spec_path;
  bool json = false;
};

std::string with_thousands(std::int64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int run_validate(const ValidateOptions& o) {
  spec::ExperimentSpec s;
  try {
    s = spec::load_spec(o.spec_path);
  } catch (const ValidationError& e) {
    if (!o.json) throw;
    // --json: the problems as data on stdout as well as the message on stderr.
    nlohmann::json problems = nlohmann::json::array();
    for (const Problem& p : e.problems())
      problems.push_back({{"path", p.path}, {"message", p.message}});
    std::printf("%s\n",
                json_text(nlohmann::json{{"valid", false}, {"problems", problems}}).c_str());
    throw;
  }
  // A spec is valid when it can run: its data files too (named by their spec keys when not).
  data::check_data_files(s.data);
  const spec::ResolvedModel m = spec::resolve_model(s.model);
  // The memory one run plans (docs/spec.md, "Limits"); idx sets without a limit count as empty
  // until their files are read.
  const auto train_samples = spec::samples_used(s.data.train);
  const auto eval_samples =
      s.data.eval ? spec::samples_used(*s.data.eval) : std::optional<std::int64_t>(0);
  const bool data_counted = train_samples && eval_samples;
  const spec::MemoryPlan plan =
      spec::plan_memory(s, m, train_samples.value_or(0), eval_samples.value_or(0));
  if (o.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : m.layers) {
      layers.push_back({{"name", l.spec.name},
                        {"type", spec::to_string(l.spec.type)},
                        {"output", l.output},
                        {"params", l.params},
                        {"flops", l.flops}});
    }
    nlohmann::json doc = {{"name", s.name},          {"valid", true},      {"input", m.input},
                          {"layers", layers},        {"params", m.params}, {"flops", m.flops},
                          {"spec", spec::to_json(s)}};
    doc["memory"] = {{"parameters", plan.parameters},
                     {"gradients", plan.gradients},
                     {"optimizer_state", plan.optimizer_state},
                     {"activations", plan.activations},
                     {"data", plan.data},
                     {"step_records", plan.step_records},
                     {"steps", data_counted ? nlohmann::json(plan.steps) : nlohmann::json()},
                     {"total", plan.total()},
                     {"limit", spec::kMaxPlannedBytes},
                     {"idx_sets_counted", data_counted}};
    std::printf("%s\n", json_text(doc).c_str());
    return 0;
  }
  std::printf("spec %s is valid\n", printable(s.name).c_str());
  std::printf("%-16s %-11s %-16s %12s %16s\n", "layer", "type", "output", "params", "FLOPs/sample");
  std::printf("%-16s %-11s %-16s %12s %16s\n", "input", "", to_string(m.input).c_str(), "", "");
  for (const auto& l : m.layers) {
    std::printf("%-16s %-11s %-16s %12s %16s\n", printable(l.spec.name).c_str(),
                spec::to_string(l.spec.type), to_string(l.output).c_str(),
                with_thousands(l.params).c_str(), with_thousands(l.flops).c_str());
  }
  std::printf("%-16s %-11s %-16s %12s %16s\n", "total", "", to_string(m.output).c_str(),
              with_thousands(m.params).c_str(), with_thousands(m.flops).c_str());
  std::printf("memory of one run: %s of at most %s (%s)%s\n",
              spec::format_bytes(plan.total()).c_str(),
              spec::format_bytes(spec::kMaxPlannedBytes).c_str(), spec::describe(plan).c_str(),
              data_counted ? "" : "; idx sets are counted when their files are read");
  return 0;
}

}  // namespace

void register_validate(CLI::App& app, CommandRun& run) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check a spec and print the resolved model");
  cmd->add_option("spec", options->spec_path, "Experiment spec (JSON)")->required();
  cmd->add_flag("--json", options->json, "Print the result as JSON (and nothing else) on stdout");
  cmd->callback([&run, options] { run = [options] { return run_validate(*options); }; });
}

}  // namespace ra::app
