#include "ops/harness.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/cpu/simd/isa.h"

namespace ops_test {

std::vector<InstructionSet> supported_instruction_sets() {
  using ra::backend::cpu::Isa;
  const struct {
    Isa isa;
    const char* env_value;
  } all[] = {{Isa::portable, "portable"}, {Isa::avx2_fma, "avx2"}, {Isa::avx512_fma, "avx512"}};
  std::vector<InstructionSet> supported;
  for (const auto& isa : all) {
    if (ra::backend::cpu::isa_supported(isa.isa)) {
      supported.push_back({isa.env_value, ra::backend::cpu::isa_name(isa.isa)});
    }
  }
  return supported;
}

std::string process_instruction_set() {
  return ra::backend::cpu::active_isa_name();
}

std::vector<const OpCase*> cases_of(const std::string& op) {
  std::vector<const OpCase*> cases;
  for (const OpCase& c : op_table()) {
    if (c.op == op) cases.push_back(&c);
  }
  return cases;
}

Arrays run_case(Ops& ops, const OpCase& c, const Arrays& arrays, KernelMode mode) {
  BackendArrays on_backend(ops.memory(), arrays);
  c.run(ops, on_backend, mode);
  return on_backend.download();
}

namespace {

template <class T>
const std::vector<T>& output(const std::map<std::string, std::vector<T>>& arrays,
                             const std::string& name) {
  const auto it = arrays.find(name);
  INFO("output '" << name << "'");
  REQUIRE(it != arrays.end());
  return it->second;
}

// The element whose difference comes closest to (or goes furthest past) its bound.
struct Worst {
  double ratio = -1;
  std::size_t index = 0;
  double actual = 0, expected = 0, bound = 0;
};

// An autotuned convolution may run an FFT or Winograd algorithm, whose rounding error is
// normwise: it spreads over the whole transformed tile, so an element whose terms are all zero
// (padding, or a stride no window covers) comes out as ~1e-9, not 0. Seen on an H200 under
// compute-sanitizer, whose slower kernels made cudnnFind pick other algorithms
// (docs/history/gpu-results.md). So such a case is held to 1e-4 of its element's scale and to 1e-6
// of the output's largest scale.
double normwise_floor(const FloatExpectation& e, bool autotuned) {
  if (!autotuned) return 0.0;
  double largest = 0.0;
  for (const double s : e.scale) largest = std::max(largest, s);
  return 1e-6 * largest;
}

Worst worst_element(const std::vector<float>& actual, const FloatExpectation& e, bool autotuned) {
  Worst worst;
  const double floor = normwise_floor(e, autotuned);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    // An expected NaN is an output the op must leave untouched (its NaN initial value).
    if (std::isnan(e.value[i]) && std::isnan(actual[i])) continue;
    double bound = e.units * kUnitRoundoff * e.scale[i] + e.atol;
    if (autotuned) bound = std::max({bound, 1e-4 * e.scale[i], floor});
    const double diff = std::abs(double(actual[i]) - e.value[i]);
    const double ratio = std::isnan(diff) ? std::numeric_limits<double>::infinity()
                         : bound > 0      ? diff / bound
                         : diff > 0       ? std::numeric_limits<double>::infinity()
                                          : 0.0;
    if (ratio > worst.ratio) worst = {ratio, i, actual[i], e.value[i], bound};
  }
  return worst;
}

template <class T>
std::string first_difference(const std::vector<T>& actual, const std::vector<T>& expected) {
  std::ostringstream out;
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    if (actual[i] != expected[i]) {
      out << "element " << i << ": " << +actual[i] << " instead of " << +expected[i];
      return out.str();
    }
  }
  out << actual.size() << " elements instead of " << expected.size();
  return out.str();
}

template <class T>
void require_exact(const std::map<std::string, std::vector<T>>& actual,
                   const std::map<std::string, std::vector<T>>& expected) {
  for (const auto& [name, values] : expected) {
    const std::vector<T>& got = output(actual, name);
    INFO("output '" << name << "' must equal the reference: " << first_difference(got, values));
    REQUIRE(got == values);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

void require_matches_reference(const Arrays& actual, const Expected& expected,
                               bool autotuned_convolution) {
  for (const auto& [name, e] : expected.f32) {
    const std::vector<float>& got = output(actual.f32, name);
    REQUIRE(got.size() == e.value.size());
    REQUIRE(e.scale.size() == e.value.size());
    const Worst worst = worst_element(got, e, autotuned_convolution);
    INFO("output '" << name << "', worst element " << worst.index << ": actual " << worst.actual
                    << " expected " << worst.expected << " |diff| "
                    << std::abs(worst.actual - worst.expected) << " bound " << worst.bound);
    REQUIRE(worst.ratio <= 1.0);
  }
  require_exact(actual.i32, expected.i32);
  require_exact(actual.u8, expected.u8);
}

void require_same_bits(const Arrays& a, const Arrays& b, const Expected& outputs) {
  for (const auto& [name, e] : outputs.f32) {
    INFO("output '" << name << "' must have the same bits");
    REQUIRE(same_bits(output(a.f32, name), output(b.f32, name)));
  }
  for (const auto& [name, e] : outputs.i32) {
    INFO("output '" << name << "' must be the same");
    REQUIRE(output(a.i32, name) == output(b.i32, name));
  }
  for (const auto& [name, e] : outputs.u8) {
    INFO("output '" << name << "' must be the same");
    REQUIRE(output(a.u8, name) == output(b.u8, name));
  }
}

}  // namespace ops_test
