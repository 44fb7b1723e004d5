// kept-outputs.bin bytes -> parse_kept_outputs (audit/kept_outputs_file.h), the file a PyTorch run
// writes beside its trace. It never throws: every input is used whole ("") or refused with a
// reason, and a refused input stores nothing. An accepted input parses again to the same store.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "audit/kept_outputs_file.h"
#include "fuzz_support.h"

namespace {

ra::trace::TraceHeader header_of_run_0() {
  ra::trace::TraceHeader h;
  h.audit_id = "0123456789abcdef0123456789abcdef";
  h.run_index = 0;
  return h;
}

std::string parse(std::string_view bytes, ra::record::KeptOutputs& store) {
  try {
    return ra::audit::parse_kept_outputs(bytes, header_of_run_0(), store);
  } catch (const std::exception& e) {
    ra::fuzz::fail(std::string("parse_kept_outputs threw ") + typeid(e).name() + ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ra::record::KeptOutputs store(std::size_t{1} << 30);
  const std::string why = parse(bytes, store);
  ra::fuzz::require(why.empty() || store.bytes_kept(0) == 0, "a refused file stored outputs");
  if (why.empty()) {
    ra::record::KeptOutputs again(std::size_t{1} << 30);
    ra::fuzz::require(parse(bytes, again).empty(), "an accepted file is refused the second time");
    ra::fuzz::require(again.bytes_kept(0) == store.bytes_kept(0),
                      "an accepted file stores other outputs the second time");
  }
  return 0;
}
