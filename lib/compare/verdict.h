#pragma once
// The audit's one verdict (DESIGN.md, "Findings as data"): each finding of a comparison that can
// pass or fail is a check with one outcome, and the audit's status and exit code follow from the
// checks in one ordered rule. The exit code, the text's verdict line, the JSON's "diverged", the
// JUnit cases and the HTML's class all read this, so that no two of them can disagree (issue 61:
// exec exited 0 under a JUnit report that failed its resume case).
#include <string>
#include <vector>

namespace ra::compare {

struct ComparisonResult;  // compare/compare.h

// passed: holds; failed: breaks what the audit expects; allowed: differs where the audit does not
// expect agreement (--expect any, a nondeterministic mode, world sizes as a configuration);
// skipped: nothing to check; inconclusive: nothing differed, but the control that proves the check
// could see a difference (an injected one-ULP change) was not seen, so "passed" would be unproven.
enum class CheckOutcome { passed, failed, allowed, skipped, inconclusive };
const char* to_string(CheckOutcome outcome);

// What a check is about (docs/report.md, "Verdict"): the spine's three, and one per finding of a
// registered check (compare/checks.h: the resumes, the data-parallel ranks, replicas, collective
// and world sizes, the perturbation control, ...), whose parts (each resume, each rank) its
// outcome combines.
enum class CheckKind {
  identity,  // the compared same-seed runs are in one outcome class (rank 0's, per world size)
  complete,  // every planned run of the audit folders has a whole trace
  compared,  // two or more same-seed runs that recorded steps were compared
  finding,   // a registered check's finding (compare/checks.h); index: its position
};
const char* to_string(CheckKind kind);

struct Check {
  CheckKind kind = CheckKind::identity;
  int index = 0;  // the position in ComparisonResult::findings (finding)
  CheckOutcome outcome = CheckOutcome::passed;
};

// The audit's status, in the order the exit code ranks them: a divergence is final (more runs
// cannot undo it); else a verdict over part of an audit is not the audit's; else an audit that
// compared nothing has none; else a verdict whose control was not seen is unproven.
enum class AuditStatus { passed, diverged, incomplete, nothing_compared, inconclusive };
const char* to_string(AuditStatus status);

struct AuditVerdict {
  AuditStatus status = AuditStatus::passed;
  std::vector<Check> checks;
  // The process's exit status (docs/exit-codes in the README): 0, 1, 4, 5 or 6 (core/error.h).
  int exit_code() const;
  // The outcome of the check of `kind` (and `index`); skipped when the audit has none.
  CheckOutcome outcome(CheckKind kind, int index = 0) const;
  bool failed(CheckKind kind, int index = 0) const {
    return outcome(kind, index) == CheckOutcome::failed;
  }
};

// The one rule: every check of the result, then the status from the failing ones.
AuditVerdict audit_verdict(const ComparisonResult& r);

}  // namespace ra::compare
