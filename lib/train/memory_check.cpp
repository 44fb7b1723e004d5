#include "train/memory_check.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "core/error.h"
#include "spec/limits.h"
#include "spec/memory_plan.h"
#include "spec/resolve.h"

namespace ra::train {
namespace {

// cgroup v2 limit of this process's group ("max" = none), as containers set it.
std::uint64_t cgroup_memory_max() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::uint64_t available_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  std::uint64_t physical = pages > 0 && page > 0
                               ? spec::saturating_mul(static_cast<std::uint64_t>(pages),
                                                      static_cast<std::uint64_t>(page))
                               : 0;
  const std::uint64_t cgroup = cgroup_memory_max();
  if (cgroup > 0 && (physical == 0 || cgroup < physical)) physical = cgroup;
  return physical;
}

void check_memory(const spec::ExperimentSpec& spec, std::int64_t train_samples,
                  std::int64_t eval_samples, std::uint64_t available) {
  const spec::MemoryPlan plan =
      spec::plan_memory(spec, spec::resolve_model(spec.model), train_samples, eval_samples);
  if (plan.total() > spec::kMaxPlannedBytes) {
    throw InputError("data.train: with " + std::to_string(train_samples) +
                     " training samples the run would hold " + spec::format_bytes(plan.total()) +
                     " of memory, more than the " + spec::format_bytes(spec::kMaxPlannedBytes) +
                     " a spec may plan (" + spec::describe(plan) +
                     "); use a limit, fewer epochs or a smaller model");
  }
  std::uint64_t host = spec::saturating_add(plan.data, plan.step_records);
  if (spec.device == spec::Device::cpu) {
    for (std::uint64_t part :
         {plan.parameters, plan.gradients, plan.optimizer_state, plan.activations}) {
      host = spec::saturating_add(host, part);
    }
  }
  if (available > 0 && host > available) {
    throw RuntimeFailure("the run would hold " + spec::format_bytes(host) +
                         " of host memory but this machine gives the process " +
                         spec::format_bytes(available) + " (" + spec::describe(plan) +
                         "); use a limit on the data sets or a smaller batch or model");
  }
}

}  // namespace ra::train
