// The next step from the evidence (compare/compare_phases.h): batches that part send the user to
// the loader, anything later to the op records of the step where the runs part.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "compare/compare_phases.h"
#include "compare/finding_facts.h"
#include "core/digest.h"

namespace ra::compare {
namespace phases {

std::optional<LoaderAdvice> loader_advice(const ComparisonResult& result,
                                          const ComparedRuns& compared,
                                          const std::optional<Digest128>& reference_indices) {
  const auto& first = result.first_divergence;
  if (result.identity.identical || !first || !first->step || first->category != Category::batches ||
      compared.traces.empty() || !compared.traces[0]->header.backend.starts_with("pytorch")) {
    return std::nullopt;  // the engine's batches are its own data stream: --trace-ops shows them
  }
  LoaderAdvice advice;
  advice.step = *first->step;
  advice.tensor = first->tensor;
  // The recorder digests an empty int64 tensor where no indices were given.
  const Digest128 none = digest(std::span<const std::int64_t>{});
  advice.indices_recorded = reference_indices && *reference_indices != none;
  if (const LoaderWorkerFindings* workers = loader_workers_of(result)) {
    advice.workers_watched = true;
    for (const SharedWorkerStream& s : workers->shared_streams) {
      if (s.differs_between_runs) advice.shared_and_differing.push_back(s.stream);
    }
  }
  return advice;
}

}  // namespace phases

std::vector<std::string> next_step_advice(const ComparisonResult& r) {
  if (const auto& a = r.next_step.loader_advice) {
    std::vector<std::string> lines{
        "the batches part at step " + std::to_string(a->step) + " (their " + a->tensor +
        "): watch the loader, whose work no op record sees (docs/pytorch.md, \"Loader workers\")"};
    if (!a->workers_watched) {
      lines.push_back("rec.watch_loader(loader) records the random streams its workers start from");
    }
    if (!a->indices_recorded) {
      lines.push_back(
          "rec.step(..., indices=...) records the sample indices: order told from "
          "content");
    }
    if (a->tensor == "indices") {
      lines.push_back(
          "the sample order differs: seed the sampler's generator, DataLoader(..., "
          "generator=torch.Generator().manual_seed(seed))");
    }
    for (const std::string& s : a->shared_and_differing) {
      lines.push_back("the workers share the stream " + s +
                      ", and its starting state differs between runs: seed it from the run's "
                      "seed, and per worker in worker_init_fn");
    }
    return lines;
  }
  if (!r.next_step.trace_ops) return {};
  const std::string step = std::to_string(r.next_step.trace_ops->first);
  if (r.next_step.tensor_digests) {
    return {"records the ops of step " + step + " and a digest per tensor there, so that the " +
            "report names the tensor and the op where the runs part"};
  }
  return {"records the ops of step " + step +
          ", so that the report names the op where the runs part"};
}

}  // namespace ra::compare
