#pragma once
// Golden files of the report tests (tests/report/golden/<name>): an output compared byte for byte
// with the file checked in, or rewritten when REPRO_AUDIT_UPDATE_GOLDEN=1 (then review the diff:
// docs/report.md, "Golden tests"). A mismatch names the golden file and its first differing line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/text_lines.h"

namespace ra::test {

inline const std::filesystem::path kGoldenDir =
    std::filesystem::path(REPRO_AUDIT_SOURCE_DIR) / "tests" / "report" / "golden";

inline bool updating_goldens() {
  const char* v = std::getenv("REPRO_AUDIT_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// "" when equal, else where they first part, readable in a test log.
inline std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  const auto want = ra::test::lines_of(expected), got = ra::test::lines_of(actual);
  for (std::size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "<end of golden>";
    const std::string g = i < got.size() ? got[i] : "<end of output>";
    if (w != g) {
      return "first difference at line " + std::to_string(i + 1) + ":\n  golden: " + w +
             "\n  actual: " + g;
    }
  }
  return "the texts differ only in their final newline";
}

inline void check_golden(const std::string& name, const std::string& actual) {
  const auto path = kGoldenDir / name;
  if (updating_goldens()) {
    std::filesystem::create_directories(kGoldenDir);
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path.string());
    return;
  }
  std::ifstream in(path, std::ios::binary);
  INFO("golden " << path.string() << " (regenerate: REPRO_AUDIT_UPDATE_GOLDEN=1 test_report)");
  REQUIRE(in.good());
  const std::string expected((std::istreambuf_iterator<char>(in)), {});
  const std::string difference = first_difference(expected, actual);
  INFO(difference);
  CHECK(difference.empty());
}

}  // namespace ra::test
