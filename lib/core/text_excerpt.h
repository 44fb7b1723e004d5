#pragma once
// Bounded echoes of user text in messages. A message that quotes what the user wrote helps; one
// that quotes a 5 MB key twice floods the terminal and may spill a secret that was pasted into a
// file by mistake. Every piece of input text that goes into an error message passes through here.
#include <cstddef>
#include <string>
#include <string_view>

namespace ra {

// Enough to recognise a key, a file name or a value; short enough for one line of a message.
inline constexpr std::size_t kExcerptBytes = 64;

// `text` itself when it has at most `max_bytes` bytes; otherwise its first `max_bytes` bytes (cut
// at a UTF-8 character boundary) followed by "... (N bytes)", N being the full length.
std::string excerpt(std::string_view text, std::size_t max_bytes = kExcerptBytes);
// The same between `quote`s, the length outside them: 'abc' or 'abc...' (5242880 bytes).
std::string quoted_excerpt(std::string_view text, char quote = '\'',
                           std::size_t max_bytes = kExcerptBytes);

// The length of the longest prefix of `text` with at most `max_bytes` bytes that does not end
// inside a UTF-8 multi-byte character.
std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes) noexcept;

}  // namespace ra
