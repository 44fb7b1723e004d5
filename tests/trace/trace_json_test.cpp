// Trace lines go through the strict JSON parser: a repeated key, a number out of range or deep
// nesting in any line is an InputError naming the file, the line and the column; files that are
// not regular files are refused without blocking.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "trace/trace_io.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string trace_error(const std::string& text) {
  try {
    ra::trace::parse_trace(text, "run-000.trace.jsonl");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  FAIL("parse_trace accepted the text");
  return {};
}

}  // namespace

TEST_CASE("trace lines are parsed strictly, with file, line and column", "[trace]") {
  CHECK_THAT(trace_error("{\"record\": \"header\", \"record\": \"end\"}\n"),
             StartsWith("run-000.trace.jsonl:1:22: duplicate key \"record\""));
  CHECK_THAT(trace_error("{\"record\": \"header\", \"format_version\": 1e400}\n"),
             StartsWith("run-000.trace.jsonl:1:40: number 1e400 is out of range"));
  // Blank lines count: the error is on line 3.
  CHECK_THAT(trace_error("\n\n{\"record\": " + std::string(100000, '[') + "\n"),
             StartsWith("run-000.trace.jsonl:3:75: objects and arrays nest deeper than 64"));
  CHECK_THAT(trace_error("{\"record\": \"header\",}\n"),
             StartsWith("run-000.trace.jsonl:1:21: invalid JSON: a ',' before '}'"));
  CHECK_THAT(trace_error("{\"record\": \"head\xFF\"}\n"), Contains(":1:") && Contains("UTF-8"));
}

TEST_CASE("read_trace refuses special files at once", "[trace]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ra_trace_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "run-000.trace.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ra::trace::read_trace(fifo),
                    fifo.string() + ": is a FIFO (named pipe), not a regular file");
  CHECK_THROWS_WITH(ra::trace::read_trace("/dev/zero"), Contains("is a character device"));
  CHECK_THROWS_WITH(ra::trace::read_trace(dir), Contains("is a directory"));
  std::filesystem::remove_all(dir);
}
