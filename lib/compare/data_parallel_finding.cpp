// A data-parallel audit as a registered check (compare/checks.h): the world sizes the runs came
// up with, each rank's runs against the reference run's rank, the replicas within each run, and
// the collective (ComparisonOptions::distributed reads them from the audit folder's rank traces).
// Each is a part of one finding: a rank or the collective as the cause fails where identity was
// expected (allowed where not); replicas that part fail whatever the expectation; one command's
// runs of two world sizes fail. Its forms are the report's data-parallel section
// (report/data_parallel_section.cpp); its facts the DistributedFindings.
#include "compare/checks.h"
#include "compare/compare.h"
#include "compare/finding_facts.h"

namespace ra::compare {

bool data_parallel_applies(const CheckContext& c) {
  return c.result.world_sizes.has_value() || static_cast<bool>(c.options.distributed);
}

Finding data_parallel_finding(const CheckContext& c) {
  return data_parallel_finding_of(
      c.result, c.options.distributed ? c.options.distributed(c.traces) : std::nullopt);
}

Finding data_parallel_finding_of(const ComparisonResult& r,
                                 std::optional<DistributedFindings> found) {
  Finding f;
  f.id = "data_parallel";
  f.name = "data parallel";
  f.own_section = true;
  if (r.world_sizes) {
    // One command whose runs came up with different world sizes (a rank that did not start)
    // compared other configurations than the audit asked for, whatever it expects of them.
    f.parts.push_back({"world sizes",
                       r.world_sizes->configuration ? CheckOutcome::passed : CheckOutcome::failed});
  }
  if (found) {
    const CheckOutcome differs =
        r.identity.expect_identical ? CheckOutcome::failed : CheckOutcome::allowed;
    for (const RankComparison& rank : found->ranks) {
      f.parts.push_back(
          {"rank " + std::to_string(rank.rank), rank.identical ? CheckOutcome::passed : differs});
    }
    // Replicas that part within one run are a fault whatever the runs are expected to do.
    f.parts.push_back(
        {"replicas", found->replicas_parted ? CheckOutcome::failed : CheckOutcome::passed});
    const bool cause = found->collective && found->collective->inputs_identical;
    f.parts.push_back({"collective", cause ? differs : CheckOutcome::passed});
  }
  f.outcome = combined_outcome(f.parts);
  f.facts = std::move(found);
  return f;
}

const DistributedFindings* distributed_of(const ComparisonResult& r) {
  const auto* found = facts_of<std::optional<DistributedFindings>>(r.findings, "data_parallel");
  return found == nullptr || !*found ? nullptr : &**found;
}

}  // namespace ra::compare
