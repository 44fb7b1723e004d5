// The collective as a cause: compare/collective_check.h.
#include "compare/collective_check.h"

#include <algorithm>

namespace ra::compare {
namespace {

bool same_layout(const trace::CollectiveRecord& a, const trace::CollectiveRecord& b) {
  return a.bucket == b.bucket && a.params == b.params && a.elements == b.elements &&
         a.dtype == b.dtype;
}

std::string bucket_text(const trace::CollectiveRecord& c) {
  std::string names;
  for (const std::string& p : c.params) names += (names.empty() ? "" : ", ") + p;
  return "bucket " + std::to_string(c.bucket) + " [" + names + "] (" + std::to_string(c.elements) +
         " " + c.dtype + ")";
}

std::string layout_text(const std::vector<trace::CollectiveRecord>& calls) {
  if (calls.empty()) return "no bucket";
  std::string out;
  for (const trace::CollectiveRecord& c : calls) out += (out.empty() ? "" : ", ") + bucket_text(c);
  return out;
}

std::string cap_text(const std::optional<std::int64_t>& cap) {
  return cap ? std::to_string(*cap) + " bytes" : std::string("none");
}

// The steps both runs recorded on `rank`, by position.
std::size_t common_steps(const RunBuckets& a, const RunBuckets& b, std::size_t rank) {
  return std::min(a.ranks[rank].size(), b.ranks[rank].size());
}

// The first layout difference at step position `s` on any rank, or none.
std::optional<BucketLayoutDifference> step_layout_difference(const RunBuckets& reference,
                                                             const RunBuckets& other,
                                                             std::size_t s) {
  for (std::size_t r = 0; r < reference.ranks.size() && r < other.ranks.size(); ++r) {
    if (s >= common_steps(reference, other, r)) continue;
    const StepBuckets& a = reference.ranks[r][s];
    const StepBuckets& b = other.ranks[r][s];
    const bool same = a.calls.size() == b.calls.size() &&
                      std::equal(a.calls.begin(), a.calls.end(), b.calls.begin(), same_layout);
    if (!same) {
      return BucketLayoutDifference{
          other.run, a.step, static_cast<int>(r),
          "run " + std::to_string(reference.run) + " reduced " + layout_text(a.calls) + "; run " +
              std::to_string(other.run) + " reduced " + layout_text(b.calls)};
    }
  }
  return std::nullopt;
}

std::size_t most_steps(const RunBuckets& b) {
  std::size_t n = 0;
  for (const auto& rank : b.ranks) n = std::max(n, rank.size());
  return n;
}

}  // namespace

RunBuckets buckets_of(const std::vector<trace::Trace>& ranks, int run) {
  RunBuckets out;
  out.run = run;
  if (ranks.empty()) return out;
  if (const auto& placement = ranks[0].header.distributed) {
    out.comm_hook = placement->comm_hook;
    out.bucket_cap_bytes = placement->bucket_cap_bytes;
  }
  for (const trace::Trace& t : ranks) {
    std::vector<StepBuckets> steps;
    steps.reserve(t.steps.size());
    for (const trace::StepRecord& s : t.steps) steps.push_back(StepBuckets{s.step, s.collectives});
    out.ranks.push_back(std::move(steps));
  }
  return out;
}

std::optional<BucketLayoutDifference> bucket_layout_difference(const RunBuckets& reference,
                                                               const RunBuckets& other) {
  if (reference.comm_hook.empty() || other.comm_hook.empty()) return std::nullopt;
  if (reference.comm_hook != other.comm_hook) {
    return BucketLayoutDifference{other.run, std::nullopt, 0,
                                  "communication hook " + reference.comm_hook + " in run " +
                                      std::to_string(reference.run) + ", " + other.comm_hook +
                                      " in run " + std::to_string(other.run)};
  }
  if (reference.bucket_cap_bytes != other.bucket_cap_bytes) {
    return BucketLayoutDifference{
        other.run, std::nullopt, 0,
        "bucket cap (bucket_cap_mb) " + cap_text(reference.bucket_cap_bytes) + " in run " +
            std::to_string(reference.run) + ", " + cap_text(other.bucket_cap_bytes) + " in run " +
            std::to_string(other.run)};
  }
  for (std::size_t s = 0; s < most_steps(reference); ++s) {
    if (auto d = step_layout_difference(reference, other, s)) return d;
  }
  return std::nullopt;
}

std::optional<CollectiveDivergence> collective_divergence(const RunBuckets& reference,
                                                          const RunBuckets& other) {
  if (reference.comm_hook.empty() || other.comm_hook.empty()) return std::nullopt;
  const std::size_t ranks = std::min(reference.ranks.size(), other.ranks.size());
  for (std::size_t s = 0; s < most_steps(reference); ++s) {
    if (step_layout_difference(reference, other, s)) return std::nullopt;  // incomparable
    const std::size_t calls =
        s < reference.ranks[0].size() ? reference.ranks[0][s].calls.size() : 0;
    for (std::size_t c = 0; c < calls; ++c) {
      // Inputs first, on every rank: a result that differs after an input that did is no
      // finding about the collective.
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t r = 0; r < ranks; ++r) {
          if (s >= common_steps(reference, other, r)) continue;
          const trace::CollectiveRecord& a = reference.ranks[r][s].calls.at(c);
          const trace::CollectiveRecord& b = other.ranks[r][s].calls.at(c);
          if (pass == 0 ? a.before == b.before : a.after == b.after) continue;
          return CollectiveDivergence{
              other.run,  reference.ranks[r][s].step, a.bucket,  a.params,
              a.elements, static_cast<int>(r),        pass == 1, other.comm_hook};
        }
      }
    }
  }
  return std::nullopt;
}

std::string describe(const CollectiveDivergence& d, const DistributedFindings& f) {
  const std::string where =
      "bucket " + std::to_string(d.bucket) + " (" + std::to_string(d.params.size()) + " parameter" +
      (d.params.size() == 1 ? "" : "s") + (d.params.empty() ? "" : ", first " + d.params.front()) +
      ", " + std::to_string(d.elements) + " elements) at step " + std::to_string(d.step) +
      " of run " + std::to_string(d.run);
  if (!d.inputs_identical) {
    return "the collective is not the cause: rank " + std::to_string(d.rank) + "'s input to " +
           where + " already differs from the reference run's (a cause inside the rank, before " +
           "the collective)";
  }
  std::string settings = f.backend;
  for (const auto& [name, value] : f.nccl) settings += ", " + name + "=" + value;
  if (d.comm_hook != "default") settings += ", hook " + d.comm_hook;
  std::string out = "root cause: the collective (" + settings + "): " + where +
                    " had identical inputs on every rank, and rank " + std::to_string(d.rank) +
                    "'s result differs from the reference run's; no kernel inside a rank";
  if (f.backend == "nccl" && f.nccl.size() < 2)
    out += " (NCCL has no determinism switch: pin NCCL_ALGO and NCCL_PROTO)";
  return out;
}

}  // namespace ra::compare
