// The text report's section on a data-parallel audit's ranks and replicas
// (report/text_sections.h, docs/distributed.md).
#include "compare/collective_check.h"
#include "compare/replica_check.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

std::string divergence_place(const compare::Divergence& d) {
  std::string out = std::string(compare::to_string(d.category));
  if (d.step) out += " at step " + std::to_string(*d.step);
  if (!d.tensor.empty()) out += " (" + d.tensor + ")";
  return out;
}

// The buckets through the collective: what differs there first, or that nothing does.
std::string collective(const compare::DistributedFindings& f) {
  if (f.comm_hook.empty())
    return "  collective: not recorded (no DDP communication hook wrapped)\n";
  std::string out;
  if (f.bucket_layout) {
    const compare::BucketLayoutDifference& d = *f.bucket_layout;
    out += "  bucket layouts differ";
    if (d.step) out += format(" at step %lld on rank %d", static_cast<long long>(*d.step), d.rank);
    out += ": " + shown(d.difference) + "\n";
  }
  if (f.collective) {
    out += "  " + shown(compare::describe(*f.collective, f)) + "\n";
  } else if (!f.bucket_layout) {
    out += "  collective: every bucket's inputs and results as in the reference run (hook " +
           shown(f.comm_hook) + ")\n";
  }
  return out;
}

}  // namespace

// Runs of several world sizes: which run had which, and that they part by design.
std::string world_sizes(const ComparisonResult& r) {
  if (!r.world_sizes) return "";
  std::string runs;
  const std::vector<int>& sizes = r.world_sizes->of_runs;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    runs += format(" run %zu %d %s%s", i, sizes[i], sizes[i] == 1 ? "process" : "ranks",
                   i + 1 < sizes.size() ? ";" : "");
  }
  if (!r.world_sizes->configuration) {
    return "world sizes DIFFER within one command:" + runs +
           "\n  the runs of one command came up with different numbers of ranks (a rank that "
           "never started, a launcher given another count): they trained other configurations "
           "than the audit asked for, so the audit fails (exit 1)\n";
  }
  std::string out = "world size as a configuration:" + runs;
  out += " (rank 0's trace stands for a data-parallel run)\n";
  if (r.identical) return out + "  the runs agree nonetheless\n";
  out +=
      "  runs of other world sizes differ by design: each rank trains its share of the global "
      "batch and the all-reduce sums the gradients in another order";
  if (r.first_divergence) out += "; first " + shown(divergence_place(*r.first_divergence));
  out += r.world_sizes->identical_within
             ? "\n  runs of one world size agree: no bug\n"
             : "\n  runs of one world size DIFFER: that is no configuration (exit 1 when "
               "identity is expected)\n";
  return out;
}

std::string distributed(const ComparisonResult& r) {
  if (!r.distributed) return world_sizes(r);
  const compare::DistributedFindings& f = *r.distributed;
  std::string nccl;
  for (const auto& [name, value] : f.nccl) nccl += ", " + name + "=" + value;
  std::string out = world_sizes(r);
  out += format("data-parallel: %d ranks on %s%s; rank 0 is compared above\n", f.world_size,
                shown(f.backend).c_str(), nccl.c_str());
  for (const compare::RankComparison& c : f.ranks) {
    if (c.identical) {
      out += format("  rank %d: bitwise identical across runs\n", c.rank);
    } else {
      out += format(
          "  rank %d: DIVERGED across runs, first %s\n", c.rank,
          c.first_divergence ? shown(divergence_place(*c.first_divergence)).c_str() : "(unknown)");
    }
  }
  if (f.replicas_parted) {
    out += "  " + shown(compare::describe(*f.replicas_parted)) + "\n";
  } else {
    out += format(
        "  replicas agree: every rank held rank 0's parameters after every step (%d "
        "run%s checked)\n",
        f.runs_checked, f.runs_checked == 1 ? "" : "s");
  }
  for (const std::string& e : f.expected_differences) out += "  expected: " + shown(e) + "\n";
  out += collective(f);
  return out;
}

}  // namespace ra::report::text
