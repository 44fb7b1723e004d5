// .npy bytes -> decode_npy_int64 (batch sample indices of an audit). An accepted array must
// encode and decode back to the same shape and values.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "formats/npy.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<std::int64_t> values;
  ra::Shape shape;
  if (!ra::fuzz::accepts(
          [&] { values = ra::formats::decode_npy_int64(bytes, "fuzz.npy", &shape); })) {
    return 0;
  }
  std::string encoded;
  try {
    encoded = ra::formats::encode_npy_int64(values, shape);
  } catch (const std::invalid_argument&) {
    return 0;  // a shape whose header exceeds format 1.0's 64 KiB: read, never written
  }
  std::vector<std::int64_t> values_again;
  ra::Shape shape_again;
  ra::fuzz::require(ra::fuzz::accepts([&] {
                      values_again =
                          ra::formats::decode_npy_int64(encoded, "fuzz.npy", &shape_again);
                    }),
                    "the encoding of an accepted array is refused");
  ra::fuzz::require(shape_again == shape && values_again == values,
                    "an array changes through encode/decode");
  return 0;
}
