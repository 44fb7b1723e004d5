#pragma once
// The HTML report (`--html FILE`, docs/report.md "HTML report"): one self-contained page, no
// script, no external resource, plots as inline SVG (report/svg_plot.h). Verdict first: the
// banner, the outcome classes, the per-category table, the root cause (with op records), the
// plots (losses, distance from the reference run's loss, growth per epoch, the map of differing
// digests, seed groups), outcome statistics, environment and ledger differences, cost per step.
#include <string>

#include "compare/compare.h"

namespace ra::report {

std::string render_html(const compare::ComparisonResult& result);

}  // namespace ra::report
