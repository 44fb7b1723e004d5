#pragma once
// The batch-invariance finding's section (compare/finding.h): its verdict, words, table, next step
// and JSON, all from one analysis (compare/invariance_check.h).
#include <string>

#include "compare/finding.h"
#include "compare/invariance_check.h"

namespace ra::compare {

struct InvarianceFindingOptions {
  bool expect_invariant = true;  // --expect identical (the default) or any
  // The command that made the sweep (`repro-audit run SPEC --invariance ...`), for a next step
  // that varies it; "" where none is known.
  std::string rerun_command;
};

// failed: the anchor's output depended on its batch (allowed under --expect any); passed: it never
// did and the control was seen; inconclusive: it never did, but the control was not seen or did
// not run, or the sweep had no probe besides the anchor alone.
Finding invariance_finding(const InvarianceAnalysis& a, const InvarianceFindingOptions& options);

}  // namespace ra::compare
