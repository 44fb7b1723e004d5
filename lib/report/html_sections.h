#pragma once
// The plot sections of the HTML report (report/html_report.h), each returning its HTML, or ""
// when it has nothing to show. html_report.cpp puts them in order with the tables.
#include <cstddef>
#include <string>

#include "compare/compare.h"
#include "report/svg_plot.h"

namespace ra::report::html {

// Up to this many runs a loss plot draws every run, each in its own colour of the palette. Above
// it, 21 curves in 20 colours could not be told apart, so it draws the reference run, the
// kFirstDivergentShown compared runs whose loss parts from the reference's first, and a band
// from the lowest to the highest loss of all runs at each step.
inline constexpr std::size_t kMaxCurves = svg::kPaletteSize;
inline constexpr std::size_t kFirstDivergentShown = 4;

std::string loss_plots(const compare::ComparisonResult& r);        // losses, distance to reference
std::string growth_plots(const compare::ComparisonResult& r);      // per epoch, from two epochs
std::string divergence_map(const compare::ComparisonResult& r);    // where digests differ
std::string seed_group_plots(const compare::ComparisonResult& r);  // with --seeds both
// With --seeds all (instability_section.cpp): a plot of the three groups per metric, the finding.
std::string instability_plots(const compare::ComparisonResult& r);
// The style sheet every HTML page of the tool uses (the audit's, a report of findings alone).
const char* page_style();

}  // namespace ra::report::html
