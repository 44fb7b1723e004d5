#pragma once
// The keys in which two environment fingerprints (record/environment.h, a trace header's
// "environment") differ: what `compare` reports as machine and build differences between runs.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ra::compare {

// The keys whose values differ between two fingerprints, sorted; a key present in only one of
// them differs. All keys count (hostname too): the report decides what to show.
std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace ra::compare
