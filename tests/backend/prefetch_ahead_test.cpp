// PrefetchAhead's bookkeeping: which lines a range covers, and that `steps` calls of step() after
// spread(steps) request every line. (What a request does is not observable; a wrong count would
// only cost time, which is why it is pinned here.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/runtime/prefetch_ahead.h"

using ra::backend::cpu::PrefetchAhead;

TEST_CASE("PrefetchAhead counts the cache lines of its ranges", "[backend][prefetch]") {
  alignas(64) static char buffer[64 * 16] = {};
  PrefetchAhead ahead;
  ahead.add(buffer + 60, 8);    // 4 bytes in line 0, 4 in line 1
  ahead.add(buffer + 128, 64);  // exactly line 2
  ahead.add(buffer + 192, 65);  // lines 3 and 4
  ahead.add(nullptr, 100);      // nothing
  ahead.add(buffer, 0);         // nothing
  REQUIRE(ahead.lines_left() == 5);
  ahead.add(buffer + 320, 1);  // line 5: the fourth range
  ahead.add(buffer + 384, 1);  // a fifth range: dropped
  REQUIRE(ahead.lines_left() == 6);
}

TEST_CASE("PrefetchAhead requests every line over the steps it was spread over",
          "[backend][prefetch]") {
  alignas(64) static char buffer[64 * 40] = {};
  for (const std::int64_t steps : {1, 3, 7, 40, 100}) {
    INFO(steps << " steps");
    PrefetchAhead ahead;
    ahead.add(buffer, 64 * 10);
    ahead.add(buffer + 64 * 20, 64 * 13 + 1);  // 14 lines
    REQUIRE(ahead.lines_left() == 24);
    ahead.spread(steps);
    const std::size_t per_step = (24 + static_cast<std::size_t>(steps) - 1) / steps;
    ahead.step();
    REQUIRE(ahead.lines_left() == 24 - std::min<std::size_t>(24, per_step));
    for (std::int64_t s = 1; s < steps; ++s) ahead.step();
    REQUIRE(ahead.lines_left() == 0);
    ahead.step();  // past the end: nothing left, nothing happens
    REQUIRE(ahead.lines_left() == 0);
  }
}
