#pragma once
// The text report: short enough to read at a glance, the verdict first.
#include <string>

#include "compare/compare.h"

namespace ra::report {

std::string render_text(const compare::ComparisonResult& result);

}  // namespace ra::report
