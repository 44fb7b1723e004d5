#pragma once
// Integer helpers of blocking arithmetic (tiles, lanes, chunks, batches), written once: many units
// had private copies of (a + b - 1) / b. Usable from host and device code (kernels/*.cu).
//
// Templates, so that each call computes in the usual arithmetic conversions of its operands:
// exactly the expression it replaces.
#include "core/host_device.h"

namespace ra {

// ceil(a / b) for a >= 0, b > 0.
template <class A, class B>
RA_HOST_DEVICE constexpr auto ceil_div(A a, B b) {
  return (a + b - 1) / b;
}

// The smallest multiple of `multiple` (> 0) that is >= value (>= 0).
template <class A, class B>
RA_HOST_DEVICE constexpr auto round_up(A value, B multiple) {
  return ceil_div(value, multiple) * multiple;
}

}  // namespace ra
