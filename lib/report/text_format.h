#pragma once
// The small formatting helpers every section of the text report uses (report/text_sections.h).
#include <string>
#include <vector>

#include "audit/compare.h"

namespace ra::report::text {

// Every string of the result that came from a spec or a trace (names, tensors, groups, points,
// environment values) goes through `shown` before it reaches the text: a name holding a newline
// or an ANSI escape must not forge or hide a line of the report (core/printable.h).
std::string shown(const std::string& text);

// printf into a string (at most 1023 bytes: every line of the report is shorter).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// "0,2,5"
std::string run_list(const std::vector<int>& runs);

// "initial weights", "optimizer state", ...
std::string category_title(audit::Category c);

// "before step 0" or "step 17 (epoch 2, batch 3)" (epochs counted from 1 for the reader).
std::string where(const audit::Divergence& d);

}  // namespace ra::report::text
