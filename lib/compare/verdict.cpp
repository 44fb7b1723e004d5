// The audit's one verdict (compare/verdict.h): the checks of a comparison and the rule that ranks
// them into a status and an exit code.
#include "compare/verdict.h"

#include <algorithm>

#include "compare/compare.h"
#include "core/error.h"

namespace ra::compare {
namespace {

// A difference fails where the audit expects identity and is allowed where it does not.
CheckOutcome differs(const ComparisonResult& r) {
  return r.identity.expect_identical ? CheckOutcome::failed : CheckOutcome::allowed;
}

// The compared runs part: rank 0's runs across every world size, or, where world size is a
// configuration the runs vary on purpose, within one world size.
bool runs_parted(const ComparisonResult& r) {
  if (r.world_sizes && r.world_sizes->configuration) return !r.world_sizes->identical_within;
  return !r.identity.identical;
}

AuditStatus status_of(const std::vector<Check>& checks) {
  const auto any = [&](CheckKind kind, CheckOutcome outcome) {
    return std::any_of(checks.begin(), checks.end(),
                       [&](const Check& c) { return c.kind == kind && c.outcome == outcome; });
  };
  const auto failing = [&](CheckKind kind) { return any(kind, CheckOutcome::failed); };
  for (CheckKind kind : {CheckKind::identity, CheckKind::finding}) {
    if (failing(kind)) return AuditStatus::diverged;
  }
  if (failing(CheckKind::complete)) return AuditStatus::incomplete;
  if (failing(CheckKind::compared)) return AuditStatus::nothing_compared;
  if (any(CheckKind::finding, CheckOutcome::inconclusive)) return AuditStatus::inconclusive;
  return AuditStatus::passed;
}

}  // namespace

const char* to_string(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::passed:
      return "passed";
    case CheckOutcome::failed:
      return "failed";
    case CheckOutcome::allowed:
      return "allowed";
    case CheckOutcome::skipped:
      return "skipped";
    case CheckOutcome::inconclusive:
      return "inconclusive";
  }
  return "?";
}

const char* to_string(CheckKind kind) {
  switch (kind) {
    case CheckKind::identity:
      return "identity";
    case CheckKind::complete:
      return "complete";
    case CheckKind::compared:
      return "compared";
    case CheckKind::finding:
      return "finding";
  }
  return "?";
}

const char* to_string(AuditStatus status) {
  switch (status) {
    case AuditStatus::passed:
      return "passed";
    case AuditStatus::diverged:
      return "diverged";
    case AuditStatus::incomplete:
      return "incomplete";
    case AuditStatus::nothing_compared:
      return "nothing_compared";
    case AuditStatus::inconclusive:
      return "inconclusive";
  }
  return "?";
}

int AuditVerdict::exit_code() const {
  switch (status) {
    case AuditStatus::passed:
      return static_cast<int>(ExitCode::ok);
    case AuditStatus::diverged:
      return static_cast<int>(ExitCode::divergence);
    case AuditStatus::incomplete:
      return static_cast<int>(ExitCode::incomplete);
    case AuditStatus::nothing_compared:
      return static_cast<int>(ExitCode::nothing_compared);
    case AuditStatus::inconclusive:
      return static_cast<int>(ExitCode::inconclusive);
  }
  return static_cast<int>(ExitCode::divergence);
}

CheckOutcome AuditVerdict::outcome(CheckKind kind, int index) const {
  for (const Check& c : checks) {
    if (c.kind == kind && c.index == index) return c.outcome;
  }
  return CheckOutcome::skipped;
}

AuditVerdict audit_verdict(const ComparisonResult& r) {
  AuditVerdict v;
  const bool nothing = r.nothing_compared();
  v.checks.push_back({CheckKind::identity, 0,
                      nothing          ? CheckOutcome::skipped
                      : runs_parted(r) ? differs(r)
                                       : CheckOutcome::passed});
  if (!r.sources.audit_folders.empty()) {
    v.checks.push_back(
        {CheckKind::complete, 0, r.incomplete() ? CheckOutcome::failed : CheckOutcome::passed});
  }
  v.checks.push_back({CheckKind::compared, 0,
                      !nothing                 ? CheckOutcome::passed
                      : r.identity.allow_empty ? CheckOutcome::skipped
                                               : CheckOutcome::failed});
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    v.checks.push_back({CheckKind::finding, static_cast<int>(i), r.findings[i].outcome});
  }
  v.status = status_of(v.checks);
  return v;
}

bool ComparisonResult::diverged() const {
  return audit_verdict(*this).status == AuditStatus::diverged;
}

}  // namespace ra::compare
