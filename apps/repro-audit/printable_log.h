#pragma once
// The log's formatter: every message is passed through ra::printable (core/printable.h) before
// the pattern is applied, so a name, path or key from a spec or trace cannot break a log line,
// forge one or send terminal escapes, whichever call site logged it. One log record is one line;
// text of several lines is logged as several records (main.cpp does so for validation problems).
#include <spdlog/formatter.h>

#include <memory>
#include <string>

namespace ra::app {

std::unique_ptr<spdlog::formatter> make_printable_formatter(const std::string& pattern);

}  // namespace ra::app
