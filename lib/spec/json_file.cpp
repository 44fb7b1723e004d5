#include "spec/json_file.h"

#include "core/atomic_file.h"
#include "formats/json_text.h"

namespace ra::spec::detail {
namespace {

// A spec is a few KB; 16 MiB is thousands of times that and still parses in a fraction of a
// second, so a wrong argument (a data file, a disk image) fails at once instead of filling memory.
constexpr std::uint64_t kMaxSpecBytes = std::uint64_t{16} << 20;

}  // namespace

nlohmann::json read_json_file(const std::string& path) {
  return parse_json_text(read_file(path, kMaxSpecBytes, "a spec file"), path);
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  return ra::formats::parse_json_text(text, source);
}

}  // namespace ra::spec::detail
