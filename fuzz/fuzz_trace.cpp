// Trace text (JSON Lines) -> parse_trace. An accepted trace must serialise to text that parses
// back to the same trace (compared through serialize_trace).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ra::trace::Trace trace;
  if (!ra::fuzz::accepts([&] { trace = ra::trace::parse_trace(text, "fuzz.trace.jsonl"); })) {
    return 0;
  }
  const std::string written = ra::trace::serialize_trace(trace);
  ra::trace::Trace again;
  ra::fuzz::require(
      ra::fuzz::accepts([&] { again = ra::trace::parse_trace(written, "fuzz.trace.jsonl"); }),
      "the serialisation of an accepted trace is refused");
  ra::fuzz::require(ra::trace::serialize_trace(again) == written,
                    "an accepted trace changes when written and read back");
  return 0;
}
