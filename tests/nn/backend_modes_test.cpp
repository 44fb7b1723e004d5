// The spec's Activation and KernelMode reach the backend as the enumerators of the same names:
// every enumerator of the spec's enums maps, and no two map to one.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "nn/backend_modes.h"

namespace {

// Every enumerator of spec::Activation, found by walking the values from 0 until one is not an
// enumerator. The switch has no default: -Wswitch names an enumerator added to the enum and
// missing here, and one added here must be in the enum.
std::vector<ra::spec::Activation> all_activations() {
  std::vector<ra::spec::Activation> all;
  for (int i = 0;; ++i) {
    const auto a = static_cast<ra::spec::Activation>(i);
    switch (a) {
      case ra::spec::Activation::none:
      case ra::spec::Activation::relu:
      case ra::spec::Activation::tanh:
      case ra::spec::Activation::sigmoid:
        all.push_back(a);
        continue;
    }
    return all;
  }
}

std::vector<ra::spec::KernelMode> all_kernel_modes() {
  std::vector<ra::spec::KernelMode> all;
  for (int i = 0;; ++i) {
    const auto m = static_cast<ra::spec::KernelMode>(i);
    switch (m) {
      case ra::spec::KernelMode::deterministic:
      case ra::spec::KernelMode::nondeterministic:
      case ra::spec::KernelMode::autotune:
      case ra::spec::KernelMode::batch_invariant:
        all.push_back(m);
        continue;
    }
    return all;
  }
}

}  // namespace

TEST_CASE("every spec activation reaches the backend as the one of its name",
          "[nn][backend_modes]") {
  const auto all = all_activations();
  REQUIRE(all.size() == 4);
  std::set<ra::backend::Activation> seen;
  for (const ra::spec::Activation a : all) {
    const ra::backend::Activation b = ra::nn::to_backend(a);
    CHECK(std::string(ra::backend::to_string(b)) == ra::spec::to_string(a));
    seen.insert(b);
  }
  CHECK(seen.size() == all.size());
}

TEST_CASE("every spec kernel mode reaches the backend as the one of its name",
          "[nn][backend_modes]") {
  const auto all = all_kernel_modes();
  REQUIRE(all.size() == 4);
  std::set<ra::backend::KernelMode> seen;
  for (const ra::spec::KernelMode m : all) {
    const ra::backend::KernelMode b = ra::nn::to_backend(m);
    CHECK(std::string(ra::backend::to_string(b)) == ra::spec::to_string(m));
    seen.insert(b);
  }
  CHECK(seen.size() == all.size());
}
