// Op windows (trace/op_window.h): what --trace-ops accepts, read strictly.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "trace/op_window.h"

TEST_CASE("op windows (--trace-ops) are read strictly", "[audit][ops]") {
  using ra::trace::parse_op_window;
  CHECK(parse_op_window("all") == ra::trace::OpWindow{});
  CHECK(parse_op_window("0:50") == ra::trace::OpWindow{0, 50});
  CHECK(parse_op_window("7:") == ra::trace::OpWindow{7, std::nullopt});
  CHECK(ra::trace::to_string(parse_op_window("3:9")) == "3:9");
  CHECK(parse_op_window("3:9").contains(3));
  CHECK_FALSE(parse_op_window("3:9").contains(9));
  // "N" is step N alone: what a first try writes, and what the report's next step names.
  CHECK(parse_op_window("5") == ra::trace::OpWindow{5, 6});
  CHECK(ra::trace::to_string(parse_op_window("0")) == "0:1");
  CHECK_THROWS_AS(parse_op_window("9223372036854775807"), ra::InputError);
  for (const char* bad : {"", "5x", ":5", "a:b", "-1:3", "3:3", "9:3", "1:2:3", " 1:2"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_op_window(bad), ra::InputError);
  }
}
