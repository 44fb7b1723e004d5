#pragma once
// What the loaders of data sets share (internal to lib/data; see dataset.h): the `limit` check,
// messages keyed by the spec's field, the check that a file can be opened, and the conversion of
// pixel bytes to scaled floats.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ra::data::detail {

// The samples a set uses: `limit` of `available` (0 = all). InputError "data.<role>.limit: ..."
// naming `source` when the limit exceeds what the set holds.
std::int64_t limited_count(std::int64_t available, std::int64_t limit, std::string_view role,
                           const std::string& source);

// A problem with a data file, said with the spec key that names it: "data.train.images: ...".
std::string keyed(std::string_view role, std::string_view field, const std::string& problem);

// InputError "<path>: <what>".
[[noreturn]] void fail_in_file(const std::string& path, const std::string& what);

// Whether the file can be opened (core/input_file.h: a regular file, readable): "" or the problem.
std::string open_problem(const std::string& path);

// The first `values` bytes as floats, each float(byte) * scale (a 256-entry table: the same bits
// as the multiply).
std::vector<float> scaled_pixels(const std::vector<std::uint8_t>& bytes, std::int64_t values,
                                 float scale);

}  // namespace ra::data::detail
