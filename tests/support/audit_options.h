#pragma once
// The options of a test audit: `runs` runs into `dir`, everything else the default.
#include <filesystem>

#include "audit/audit.h"

namespace ra::test {

inline audit::AuditOptions audit_options_in(const std::filesystem::path& dir, int runs) {
  audit::AuditOptions o;
  o.runs = runs;
  o.out_dir = dir;
  o.tool_version = "test";
  return o;
}

}  // namespace ra::test
