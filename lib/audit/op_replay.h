#pragma once
// The magnitude of an op root cause (compare.h RootCause::Magnitude, docs/report.md "Magnitude").
// Traces hold digests of an op's outputs, not their values, so the values are made again:
//
// 1. The reference run is replayed from its trace header (spec, seeds, kernel policy, backend,
//    threads) through an OpRecorder, up to the root-cause op. Every op it records on the way is
//    steered to the reference: where its inputs match the reference's record and its outputs do
//    not (a nondeterministic op took another outcome), it is executed again on the same inputs
//    until they do. A replay whose inputs part from the reference's anyway (before the window, or
//    an outcome not reproduced) is started again, a few times.
// 2. At the root-cause op, whose inputs must match the recorded ones, the op is executed on them
//    until each compared run's recorded outputs appear, with the run's injected op fault (a test
//    facility) applied as it was. Those are the runs' outputs, bit for bit; they are compared
//    with the reference's element by element (count, max ULP, max |difference|).
//
// Runs whose outputs do not appear within the limits get no magnitude, and the note says why: a
// GPU kernel with many atomic partial sums may have more outcomes than the executions find.
#include <vector>

#include "compare/compare.h"
#include "record/kept_outputs.h"
#include "trace/trace.h"

namespace ra::audit {

struct ReplayLimits {
  int executions = 256;  // of the root-cause op, and of each op steered
  double seconds = 60;   // of executions of the root-cause op
  int replays = 3;       // of the reference run, when one parts from it before the op
};

// Fills `magnitude` of every root cause of kind op in `result` (a comparison of `traces`). Never
// throws for what a replay cannot do here (data files missing, no GPU for a GPU run): the
// magnitude's note says so.
// Outputs in `kept` (an in-process audit's runs, keyed by their audit run numbers) are used as
// found, before any replay; when every run's are there, no replay is made.
void measure_magnitudes(compare::ComparisonResult& result, const std::vector<trace::Trace>& traces,
                        const ReplayLimits& limits = {}, const record::KeptOutputs* kept = nullptr);

}  // namespace ra::audit
