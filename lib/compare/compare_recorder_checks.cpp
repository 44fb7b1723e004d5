// What the PyTorch recorder's optional header fields tell about the runs (compare_phases.h): the
// misuse it found, and seeds that never reached the random states.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "compare/compare_phases.h"

namespace ra::compare::phases {
namespace {

std::string run_words(const std::vector<int>& runs) {
  std::string out = runs.size() == 1 ? "run " : "runs ";
  for (std::size_t i = 0; i < runs.size(); ++i) out += (i ? ", " : "") + std::to_string(runs[i]);
  return out;
}

// Why runs given different seeds started from the same `streams`, from seed_everything's record.
std::string seeding_cause(const std::vector<const trace::Trace*>& runs,
                          const std::set<std::string>& streams) {
  bool all_seeded = true;
  std::set<nlohmann::json> seeded_states;
  for (const trace::Trace* t : runs) {
    if (t->header.seeded.is_null()) {
      all_seeded = false;
      continue;
    }
    nlohmann::json pinned;
    for (const std::string& s : streams)
      pinned[s] = t->header.seeded["rng_states"].value(s, nlohmann::json());
    seeded_states.insert(pinned);
  }
  if (!all_seeded) return "the script does not call repro_audit.seed_everything";
  for (const trace::Trace* t : runs) {
    const nlohmann::json& s = t->header.seeded;
    if (s.contains("torch_initial_seed") && s["torch_initial_seed"] != s["seed"]) {
      return "seed_everything applied each run's seed, and the script seeded torch again after "
             "it (run " +
             std::to_string(t->header.run_index) + ": torch.initial_seed() is " +
             s["torch_initial_seed"].dump() + ", not " + s["seed"].dump() +
             "; a torch.manual_seed(args.seed)?)";
    }
  }
  if (seeded_states.size() > 1) {
    return "seed_everything applied each run's seed, and the script seeded again after it (a "
           "torch.manual_seed(args.seed)?)";
  }
  return "seed_everything was given the same seed in every run (a seed passed as its first "
         "argument overrides the audit's)";
}

}  // namespace

std::vector<std::string> recorder_warnings(const std::vector<trace::Trace>& traces) {
  std::map<std::string, std::vector<int>> runs_of;  // each warning once, with its runs
  std::vector<std::string> order;
  for (const trace::Trace& t : traces) {
    for (const std::string& w : t.header.recorder_warnings) {
      if (!runs_of.contains(w)) order.push_back(w);
      runs_of[w].push_back(t.header.run_index);
    }
  }
  std::vector<std::string> out;
  for (const std::string& w : order) out.push_back(run_words(runs_of[w]) + ": " + w);
  return out;
}

std::optional<std::string> unapplied_seeds_warning(const std::vector<trace::Trace>& traces) {
  std::vector<const trace::Trace*> recorded;
  std::set<std::uint64_t> seeds;
  for (const trace::Trace& t : traces) {
    if (!t.header.rng_states.is_object()) continue;
    recorded.push_back(&t);
    seeds.insert(t.header.seed_init);
  }
  if (seeds.size() < 2) return std::nullopt;  // one seed: nothing to tell apart
  std::set<std::string> pinned;  // streams in the same state in every run, whatever its seed
  for (const auto& item : recorded[0]->header.rng_states.items()) {
    // (Not a structured binding: clang 14, CI's sanitizer compiler, cannot capture one.)
    const std::string& stream = item.key();
    const nlohmann::json& state = item.value();
    const bool same = std::all_of(recorded.begin(), recorded.end(), [&](const trace::Trace* t) {
      return t->header.rng_states.contains(stream) && t->header.rng_states[stream] == state;
    });
    if (same) pinned.insert(stream);
  }
  if (pinned.empty()) return std::nullopt;
  std::string names;
  for (const std::string& s : pinned) names += (names.empty() ? "" : ", ") + s;
  return "runs given different seeds start from the same random state (" + names +
         "): their seeds never reached it, so the seed-to-seed spread measures nothing; " +
         seeding_cause(recorded, pinned) +
         ". Seed once, with repro_audit.seed_everything(default=args.seed), and not again after "
         "it (docs/pytorch.md, \"Seeds\")";
}

std::optional<std::string> empty_first_epoch_warning(const std::vector<trace::Trace>& traces) {
  std::vector<int> runs;
  for (const trace::Trace& t : traces) {
    // The recorder writes an epoch with no step for every epoch number a step skipped: an empty
    // epoch 0 before steps of epoch 1 is a loop that counts its epochs from 1.
    const auto& e = t.epochs;
    if (e.size() >= 2 && e[0].epoch == 0 && e[0].steps == 0 && e[1].steps > 0) {
      runs.push_back(t.header.run_index);
    }
  }
  if (runs.empty()) return std::nullopt;
  return run_words(runs) +
         ": epoch 0 has no step, the first steps are of epoch 1: epochs count from 0 (a loop "
         "`for epoch in range(1, epochs + 1)` passes rec.step(..., epoch=epoch - 1)); the "
         "growth per epoch leaves the empty epoch out";
}

}  // namespace ra::compare::phases
