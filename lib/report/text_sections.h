#pragma once
// The sections of the text report, in the order render_text (report/text_report.h) prints them.
// Each returns its lines, newline-terminated, or "" when it has nothing to say.
//   text_verdict_sections.cpp   what the reader needs first: header, verdict, first
//                               divergence, loader workers, audit folders, environment,
//                               per-category table
//   text_root_cause.cpp         the root-cause op, from op records (--trace-ops)
//   text_measure_sections.cpp   how much: loss differences, growth per epoch, snapshots, seed
//                               group statistics, timing and recording cost
//   instability_section.cpp     the perturbed group and the instability finding (--seeds all)
#include <string>

#include "compare/compare.h"

namespace ra::report::text {

using compare::AuditFolderCheck;
using compare::ComparisonResult;
using compare::MachineDifference;
using compare::ShardState;

std::string header(const ComparisonResult& r);            // spec, run count, mode
std::string verdict(const ComparisonResult& r);           // the verdict and the outcome classes
std::string first_divergence(const ComparisonResult& r);  // where the compared runs first part
std::string distributed(const ComparisonResult& r);  // data-parallel ranks (text_distributed.cpp)
std::string root_cause(const ComparisonResult& r);   // with op records: the op where they part
std::string next_step(const ComparisonResult& r);  // the --trace-ops re-run that would localise it
std::string loader_workers(const ComparisonResult& r);  // random streams loader workers share
std::string audit_folders(const ComparisonResult& r);   // missing runs, foreign files, notes
std::string environment(const ComparisonResult& r);     // environment_section.cpp
std::string category_table(const ComparisonResult& r);  // one line per category
std::string resumes(const ComparisonResult& r);  // each resumed run's restore (text_resume.cpp)
// One resumed run's restore: its first line the verdict, then the pieces and what followed.
std::string resume(const ComparisonResult& r, const compare::ResumeVerdict& v);

std::string loss_differences(const ComparisonResult& r);  // first differing and final loss
std::string growth_table(const ComparisonResult& r);      // per epoch, when runs differ
std::string snapshots(const ComparisonResult& r);         // snapshot points that differ
std::string seed_groups(const ComparisonResult& r);       // statistics per group, std ratios
std::string timing(const ComparisonResult& r);            // step time per group, recording cost
// With a perturbed group (instability_section.cpp): spreads, ratios and the finding per metric.
std::string instability(const ComparisonResult& r);

}  // namespace ra::report::text
