// kept-outputs.bin bytes -> parse_kept_outputs (rundir/kept_outputs_file.h), the file a PyTorch run
// writes beside its trace. It never throws: every input is used whole ("") or refused with a
// reason, and a refused input gives no entry. An accepted input parses again to the same entries.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "fuzz_support.h"
#include "rundir/kept_outputs_file.h"

namespace {

ra::trace::TraceHeader header_of_run_0() {
  ra::trace::TraceHeader h;
  h.audit_id = "0123456789abcdef0123456789abcdef";
  h.run_index = 0;
  return h;
}

using Entries = std::vector<ra::rundir::KeptOutputsEntry>;

std::string parse(std::string_view bytes, Entries& entries) {
  try {
    return ra::rundir::parse_kept_outputs(bytes, header_of_run_0(), entries);
  } catch (const std::exception& e) {
    ra::fuzz::fail(std::string("parse_kept_outputs threw ") + typeid(e).name() + ": " + e.what());
  }
}

bool same(const Entries& a, const Entries& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].step != b[i].step || a[i].index != b[i].index || a[i].bytes != b[i].bytes ||
        a[i].dtypes != b[i].dtypes)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Entries entries;
  const std::string why = parse(bytes, entries);
  ra::fuzz::require(why.empty() || entries.empty(), "a refused file stored outputs");
  if (why.empty()) {
    Entries again;
    ra::fuzz::require(parse(bytes, again).empty(), "an accepted file is refused the second time");
    ra::fuzz::require(same(again, entries),
                      "an accepted file stores other outputs the second time");
  }
  return 0;
}
