#pragma once
// How much the outputs of two executions of an op differ, element by element (the magnitude of a
// root cause, audit/op_replay.h): per output, the elements that differ and, for f32 outputs, the
// largest ULP and absolute distance.
#include <vector>

#include "compare/compare.h"
#include "compare/statistics.h"

namespace ra::compare {

// The difference of each output whose bytes differ between two executions (`a`, `b`: the
// outputs' bytes, by position; `dtypes`: their element types).
std::vector<RootCause::OutputDifference> output_differences(
    const std::vector<std::vector<unsigned char>>& a,
    const std::vector<std::vector<unsigned char>>& b, const std::vector<DType>& dtypes);

// Widens `spread` (one entry per output, by position) to cover `d`.
void widen(std::vector<RootCause::OutputDifference>& spread, const RootCause::OutputDifference& d);

}  // namespace ra::compare
