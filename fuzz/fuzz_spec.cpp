// Spec JSON text -> parse_spec_text (JSON syntax, validation of every key, model resolution).
// Accepted specs must survive their canonical JSON: parse_spec(to_json(s)) is accepted and gives
// the same canonical JSON (what a trace header stores and its spec digest hashes).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"
#include "spec/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ra::spec::ExperimentSpec spec;
  // A base folder that does not exist: relative data paths resolve against it, nothing is read.
  if (!ra::fuzz::accepts([&] { spec = ra::spec::parse_spec_text(text, "fuzz.json", "/fuzz"); })) {
    return 0;
  }
  const nlohmann::json canonical = ra::spec::to_json(spec);
  ra::spec::ExperimentSpec again;
  ra::fuzz::require(ra::fuzz::accepts([&] { again = ra::spec::parse_spec(canonical, "/fuzz"); }),
                    "the canonical JSON of an accepted spec is refused");
  ra::fuzz::require(ra::spec::to_json(again) == canonical,
                    "the canonical JSON changes when read back");
  return 0;
}
