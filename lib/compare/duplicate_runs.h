#pragma once
// One run given twice to a comparison: the same file named twice (or by two paths), or two copies
// of one trace. Their agreement says nothing about reproducibility, so a comparison warns about
// them (it is allowed: comparing a trace with itself is a quick check of the tool).
#include <string>
#include <vector>

#include "trace/trace.h"

namespace ra::compare {

// Groups (of two or more run indices, ascending) of traces that record one run: traces whose
// whole content is identical -- the header (run index, seeds, environment) and every record,
// the wall-clock time of every step included. Two real runs essentially never share every step's
// timing to the nanosecond, while two separate audits of one spec share everything else.
// `contents`: per trace, the digest of its whole content (the walk over the steps folds it,
// compare/step_walk.h).
std::vector<std::vector<int>> copies_of_one_run(const std::vector<Digest128>& contents);

// The warning for one such group: whether its traces are one file or copies, and what it means.
std::string copies_warning(const std::vector<trace::Trace>& traces, const std::vector<int>& group);

}  // namespace ra::compare
