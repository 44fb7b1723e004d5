// Base64 (core/base64.h) against RFC 4648's own test vectors (section 10), every byte value, and
// the malformed inputs a damaged file holds.
#include <catch2/catch.hpp>

#include <string>

#include "core/base64.h"
#include "core/error.h"

using Catch::Matchers::Contains;

TEST_CASE("base64 gives RFC 4648's test vectors both ways", "[core][base64]") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(ra::base64_encode(plain) == encoded);
    CHECK(ra::base64_decode(encoded, "v") == plain);
  }
}

TEST_CASE("base64 round-trips every byte value at every padding", "[core][base64]") {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t n = 253; n <= 256; ++n) {
    const std::string part = bytes.substr(0, n);
    CHECK(ra::base64_decode(ra::base64_encode(part), "v") == part);
  }
}

TEST_CASE("malformed base64 is refused with the field named", "[core][base64]") {
  CHECK_THROWS_WITH(ra::base64_decode("Zm9", "field 'x'"),
                    Contains("field 'x'") && Contains("not a multiple of 4"));
  CHECK_THROWS_AS(ra::base64_decode("Zm9*", "x"), ra::InputError);
  CHECK_THROWS_AS(ra::base64_decode("Z===", "x"), ra::InputError);
  CHECK_THROWS_AS(ra::base64_decode("Zg==Zm9v", "x"), ra::InputError);  // padding mid-text
  CHECK_THROWS_AS(ra::base64_decode("Zg=v", "x"), ra::InputError);
}
