#pragma once
// The JUnit XML report (`--junit FILE`, docs/ci.md): what CI systems (GitLab, Jenkins, GitHub
// test-report actions) read. One testsuite per audit; one testcase for the overall verdict and
// one per category of recorded state (initial weights ... optimizer state), each failing where
// bitwise identity was expected and not found, with the first divergent step, tensor and runs in
// its message; the runs' times and the spec digest, mode and seeds as properties; the text report
// as the suite's system-out. Only the subset of the format those readers share is written
// (docs/ci.md "JUnit XML", schema docs/junit-subset.xsd).
#include <string>

#include "compare/compare.h"

namespace ra::report {

std::string render_junit(const compare::ComparisonResult& result);

// `text` made safe inside an XML 1.0 element or attribute: markup characters as entities, and
// the characters XML 1.0 forbids (C0 controls other than tab, newline and carriage return,
// U+FFFE, U+FFFF) and bytes that are not UTF-8 as visible escapes (core/printable.h).
std::string xml_escaped(const std::string& text);

}  // namespace ra::report
