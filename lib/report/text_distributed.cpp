// The text report's section on a data-parallel audit's ranks and replicas
// (report/text_sections.h, docs/distributed.md).
#include "compare/collective_check.h"
#include "compare/replica_check.h"
#include "report/text_format.h"
#include "report/text_sections.h"

namespace ra::report::text {
namespace {

std::string divergence_place(const audit::Divergence& d) {
  std::string out = std::string(audit::to_string(d.category));
  if (d.step) out += " at step " + std::to_string(*d.step);
  if (!d.tensor.empty()) out += " (" + d.tensor + ")";
  return out;
}

// The buckets through the collective: what differs there first, or that nothing does.
std::string collective(const audit::DistributedFindings& f) {
  if (f.comm_hook.empty())
    return "  collective: not recorded (no DDP communication hook wrapped)\n";
  std::string out;
  if (f.bucket_layout) {
    const audit::BucketLayoutDifference& d = *f.bucket_layout;
    out += "  bucket layouts differ";
    if (d.step) out += format(" at step %lld on rank %d", static_cast<long long>(*d.step), d.rank);
    out += ": " + shown(d.difference) + "\n";
  }
  if (f.collective) {
    out += "  " + shown(audit::describe(*f.collective, f)) + "\n";
  } else if (!f.bucket_layout) {
    out += "  collective: every bucket's inputs and results as in the reference run (hook " +
           shown(f.comm_hook) + ")\n";
  }
  return out;
}

}  // namespace

std::string distributed(const ComparisonResult& r) {
  if (!r.distributed) return "";
  const audit::DistributedFindings& f = *r.distributed;
  std::string nccl;
  for (const auto& [name, value] : f.nccl) nccl += ", " + name + "=" + value;
  std::string out = format("data-parallel: %d ranks on %s%s; rank 0 is compared above\n",
                           f.world_size, shown(f.backend).c_str(), nccl.c_str());
  for (const audit::RankComparison& c : f.ranks) {
    if (c.identical) {
      out += format("  rank %d: bitwise identical across runs\n", c.rank);
    } else {
      out += format(
          "  rank %d: DIVERGED across runs, first %s\n", c.rank,
          c.first_divergence ? shown(divergence_place(*c.first_divergence)).c_str() : "(unknown)");
    }
  }
  if (f.replicas_parted) {
    out += "  " + shown(audit::describe(*f.replicas_parted)) + "\n";
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
