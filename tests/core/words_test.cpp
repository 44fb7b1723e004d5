// Command words given as one option's text (core/words.h): split at runs of spaces and tabs, none
// empty, no quoting.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/words.h"

using Words = std::vector<std::string>;

TEST_CASE("words are split at runs of spaces and tabs", "[core][words]") {
  CHECK(ra::split_words("python3 b.py --lr 0.1") == Words{"python3", "b.py", "--lr", "0.1"});
  CHECK(ra::split_words("  a\t\tb  ") == Words{"a", "b"});
  CHECK(ra::split_words("").empty());
  CHECK(ra::split_words(" \t ").empty());
  // No quoting: a quote is a character of its word.
  CHECK(ra::split_words("--resume '{checkpoint}'") == Words{"--resume", "'{checkpoint}'"});
  // Other whitespace is no separator (a newline stays in its word).
  CHECK(ra::split_words("a\nb c") == Words{"a\nb", "c"});
}
