#include "compare/fingerprint_differences.h"

#include <set>

namespace ra::compare {

std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& x = a.is_object() ? a : kEmpty;
  const nlohmann::json& y = b.is_object() ? b : kEmpty;
  std::set<std::string> keys;
  for (const auto& [key, value] : x.items()) keys.insert(key);
  for (const auto& [key, value] : y.items()) keys.insert(key);
  // A key that is null in one fingerprint and absent from the other says the same (nothing
  // known), so it is no difference: a PyTorch trace writes "cuda": null where the engine's has
  // no such key.
  static const nlohmann::json kNull;
  std::vector<std::string> differing;
  for (const std::string& key : keys) {
    const auto i = x.find(key);
    const auto j = y.find(key);
    if ((i == x.end() ? kNull : *i) != (j == y.end() ? kNull : *j)) differing.push_back(key);
  }
  return differing;
}

}  // namespace ra::compare
