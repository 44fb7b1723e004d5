#pragma once
// Base64 (RFC 4648, the standard alphabet with '=' padding): how the trace formats carry raw
// bytes inside JSON (an invariance sweep's output values).
#include <string>
#include <string_view>

namespace ra {

std::string base64_encode(std::string_view bytes);
// Throws InputError naming `what` on a character outside the alphabet, a length that is not a
// multiple of 4, or padding anywhere but at the end.
std::string base64_decode(std::string_view text, const std::string& what);

}  // namespace ra
