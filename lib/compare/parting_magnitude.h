#pragma once
// How far apart the op where two programs part put its outputs (--align; docs/equivalence.md,
// "Aligning two programs' ops"): the outputs each program kept of its record (PyTorch runs keep op
// outputs within a budget, rundir/kept_outputs_file.h), compared element by element. Only for a
// parting at an op (equal inputs, other outputs); a stretch or the step's inputs have no one op
// whose outputs say it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/checks.h"
#include "compare/program_alignment.h"

namespace ra::compare {

struct PartingMagnitude {
  std::vector<std::string> lines;  // for the finding's details
  nlohmann::json data;             // null when not measured; else {"outputs": [...]}, or "note"
};

PartingMagnitude parting_magnitude(const PartingSummary& parting, const CheckContext& context);

}  // namespace ra::compare
