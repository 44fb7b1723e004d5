// printable(): user text cannot move the cursor, break a line or reorder what a terminal shows.
#include <catch2/catch.hpp>

#include <string>

#include "core/printable.h"

using ra::printable;

TEST_CASE("printable keeps printable ASCII and valid UTF-8 as they are", "[core][printable]") {
  CHECK(printable("keras-mnist v2.1 (fashion)") == "keras-mnist v2.1 (fashion)");
  CHECK(printable("résumé 実験 🙂") == "résumé 実験 🙂");
  CHECK(printable("") == "");
  CHECK(ra::is_printable("plain"));
}

TEST_CASE("printable escapes C0, DEL and C1 controls", "[core][printable]") {
  CHECK(printable("a\nb") == "a\\nb");
  CHECK(printable("a\rb\tc") == "a\\rb\\tc");
  CHECK(printable("\x1b[2K") == "\\x1b[2K");
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(printable("\x7f") == "\\x7f");
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\u009b31m");           // C1 CSI, as UTF-8
  CHECK(printable("back\\slash") == "back\\slash");  // kept: see the idempotence test
  CHECK_FALSE(ra::is_printable("a\nb"));
}

TEST_CASE("printable escapes line separators and bidirectional overrides", "[core][printable]") {
  CHECK(printable("a\xe2\x80\xa8"
                  "b") == "a\\u2028b");
  CHECK(printable("abc\xe2\x80\xae"
                  "cba") == "abc\\u202ecba");
  CHECK(printable("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");
}

TEST_CASE("printable writes bytes that are not UTF-8 as hex escapes", "[core][printable]") {
  CHECK(printable("bad\xff") == "bad\\xff");
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  CHECK(printable("\xe2\x82") == "\\xe2\\x82");                    // cut off
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST_CASE("a forged verdict line cannot survive printable", "[core][printable]") {
  const std::string name = "x\n  verdict: BITWISE IDENTICAL\x1b[2K";
  const std::string shown = printable(name);
  CHECK(shown.find('\n') == std::string::npos);
  CHECK(shown.find('\x1b') == std::string::npos);
  CHECK(shown == "x\\n  verdict: BITWISE IDENTICAL\\x1b[2K");
}

TEST_CASE("printable is idempotent, so layered outputs do not escape twice", "[core][printable]") {
  for (const std::string text :
       {std::string("a\nb\x1b[0m\\x"), std::string("bad\xff\xe2\x80\xae"), std::string("plain")}) {
    const std::string once = printable(text);
    CHECK(printable(once) == once);
    CHECK(ra::is_printable(once));
  }
}
