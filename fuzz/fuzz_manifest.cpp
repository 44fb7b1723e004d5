// Manifest text (audit.json) -> manifest_from_json. An accepted manifest must write back to a
// manifest that reads the same, must not differ from itself, and its shard arithmetic (every
// shard's runs, every run's shard) must hold over the whole plan: the loops `compare` and
// `--resume` run over a crafted manifest, under UBSan in scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/json_text.h"
#include "fuzz_support.h"
#include "rundir/manifest.h"
#include "rundir/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ra::rundir::AuditManifest manifest;
  if (!ra::fuzz::accepts([&] {
        manifest = ra::rundir::manifest_from_json(ra::formats::parse_json_text(text, "audit.json"),
                                                  "audit.json");
      })) {
    return 0;
  }
  const nlohmann::json written = ra::rundir::to_json(manifest);
  ra::rundir::AuditManifest again;
  ra::fuzz::require(
      ra::fuzz::accepts([&] { again = ra::rundir::manifest_from_json(written, "audit.json"); }),
      "the serialisation of an accepted manifest is refused");
  ra::fuzz::require(ra::rundir::to_json(again) == written,
                    "an accepted manifest changes when written and read back");
  ra::fuzz::require(ra::rundir::manifest_differences(manifest, again).empty(),
                    "a manifest differs from itself");
  if (manifest.shards > 0) {
    const int planned = static_cast<int>(manifest.runs.size());
    std::size_t runs = 0;
    for (int k = 0; k < manifest.shards; ++k) {
      for (int run : ra::rundir::runs_of_shard({k, manifest.shards}, planned)) {
        ra::fuzz::require(ra::rundir::shard_of_run(run, manifest.shards) == k,
                          "a run is listed under another shard than its own");
        ++runs;
      }
    }
    ra::fuzz::require(runs == manifest.runs.size(), "the shards do not hold every run once");
  }
  return 0;
}
