// The loader-workers section (report/sections.h): the loader-workers finding
// (compare/loader_workers_finding.cpp) in every form (docs/pytorch.md, "Loader workers"). In
// words, after the next step: each random stream the workers of a pass start from alike, and
// whether its start also differs between runs; the HTML page gives those words in the divergence
// block; no JUnit case (it decides nothing); the JSON report's "loader_workers".
#include "compare/finding_facts.h"
#include "report/sections.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

// "0-3", "0,2,5-6": consecutive numbers as ranges.
std::string ranges(const std::vector<int>& numbers) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(numbers[i]);
    if (j > i) out += "-" + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string loader_workers(const ComparisonResult& r) {
  const compare::LoaderWorkerFindings* found = compare::loader_workers_of(r);
  if (found == nullptr) return "";
  const compare::LoaderWorkerFindings& f = *found;
  if (f.shared_streams.empty()) {
    return "Data loader workers: no random stream shared between the workers of a pass (runs " +
           ranges(f.runs_recorded) + " recorded them)\n";
  }
  std::string out;
  for (const compare::SharedWorkerStream& s : f.shared_streams) {
    // Wrapped, never cut: the fix is at the end of the line (cut_long_lines would drop it).
    out += wrapped(
        format("Data loader workers: workers %s start from the same state of the random stream %s "
               "(runs %s, %lld of %lld passes over the data): unless it is reseeded per sample or "
               "never drawn from, what they draw from it, random augmentations or samples, "
               "repeats across workers; seed it per worker in worker_init_fn (docs/pytorch.md, "
               "\"Loader workers\")",
               ranges(s.workers).c_str(), shown(s.stream).c_str(), ranges(s.runs).c_str(),
               static_cast<long long>(s.passes), static_cast<long long>(s.passes_recorded)),
        kMaxLineLength, "  ");
    // A line of its own, after the fix above.
    if (s.differs_between_runs) {
      out +=
          "  and its starting state also differs between the runs (not seeded from the run's "
          "seed), so the same-seed runs draw differently too: seed it from the run's seed\n";
    }
  }
  return out;
}

}  // namespace ra::report::text

namespace ra::report {
namespace {

using nlohmann::json;

json workers_json(const compare::LoaderWorkerFindings& f) {
  json shared = json::array();
  for (const compare::SharedWorkerStream& s : f.shared_streams) {
    shared.push_back({{"stream", s.stream},
                      {"workers", s.workers},
                      {"runs", s.runs},
                      {"passes", s.passes},
                      {"passes_recorded", s.passes_recorded},
                      {"differs_between_runs", s.differs_between_runs}});
  }
  return {{"runs_recorded", f.runs_recorded}, {"shared_streams", std::move(shared)}};
}

}  // namespace

std::string loader_workers_text(const compare::ComparisonResult& r, const compare::Finding&) {
  return text::loader_workers(r);
}

// Only for traces that recorded their data loader's workers (PyTorch scripts).
void loader_workers_json(const compare::ComparisonResult& r, const compare::Finding&,
                         json& report) {
  if (const compare::LoaderWorkerFindings* found = compare::loader_workers_of(r))
    report["loader_workers"] = workers_json(*found);
}

}  // namespace ra::report
