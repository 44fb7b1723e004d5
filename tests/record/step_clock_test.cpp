// The step clock's median (record/step_clock.h): intervals between consecutive starts, past the
// warm-up, against a median computed by hand; too few starts give none.
#include <catch2/catch.hpp>

#include <vector>

#include "record/step_clock.h"

using ra::record::median_interval;

TEST_CASE("step clock: the median interval skips the warm-up", "[record]") {
  // Intervals 5, 4 (warm-up), then 1, 3, 2: median 2.
  const std::vector<double> starts{0.0, 5.0, 9.0, 10.0, 13.0, 15.0};
  CHECK(median_interval(starts, 2) == Approx(2.0));
  // No warm-up: 5, 4, 1, 3, 2 -> 3.
  CHECK(median_interval(starts, 0) == Approx(3.0));
  // An even count: the mean of the two middle values (1, 3, 2, 4 -> 2.5).
  CHECK(median_interval({0.0, 1.0, 4.0, 6.0, 10.0}, 0) == Approx(2.5));
}

TEST_CASE("step clock: too few steps give no median", "[record]") {
  CHECK_FALSE(median_interval({}, 2));
  CHECK_FALSE(median_interval({1.0}, 0));
  CHECK_FALSE(median_interval({0.0, 1.0, 2.0}, 2));  // two intervals, both warm-up
  CHECK(median_interval({0.0, 1.0, 2.0, 4.0}, 2) == Approx(2.0));
}
