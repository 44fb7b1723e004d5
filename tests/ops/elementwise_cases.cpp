// Elementwise cases: activation_forward, activation_backward (every activation), residual_add,
// dropout_forward and dropout_backward. Counts of 1, one short of a SIMD width and a few
// elementwise blocks (the last partial), so every tail runs.
#include "backend/cpu/reference/reference_ops.h"
#include "ops/case_support.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::backend::Activation;

const std::int64_t kCounts[] = {1, 15, 40000};

const struct {
  Activation act;
  const char* name;
} kActivations[] = {{Activation::none, "none"},
                    {Activation::relu, "relu"},
                    {Activation::tanh, "tanh"},
                    {Activation::sigmoid, "sigmoid"}};

// Uniform in [-6, 6), with saturation and overflow territory for exp at the front (sigmoid must
// stay finite and in [0, 1]).
std::vector<float> activation_inputs(std::int64_t count, std::uint32_t seed) {
  std::vector<float> x = random_values(count, seed, -6.0f, 6.0f);
  const float extremes[] = {0.0f,   -0.0f,  20.0f,   -20.0f, 88.0f,
                            -88.0f, 100.0f, -100.0f, 1e30f,  -1e30f};
  for (std::size_t i = 0; i < x.size() && i < std::size(extremes); ++i) x[i] = extremes[i];
  return x;
}

std::string count_name(std::int64_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

void add_activations(std::vector<OpCase>& table, Activation act, const std::string& act_name,
                     std::int64_t count) {
  const std::string name = act_name + ", " + count_name(count);
  const bool exact = act == Activation::none || act == Activation::relu;
  table.push_back({"activation_forward", name, false, false,
                   [count] {
                     Arrays a;
                     a.f32["x"] = activation_inputs(count, 71);
                     a.f32["y"] = nan_values(count);
                     return a;
                   },
                   [act, count](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.activation_forward(act, count, a.f32("x"), a.f32("y"));
                   },
                   [act, count, exact](const Arrays& a) {
                     std::vector<float> y(count);
                     ref::activation_forward(act, count, a.f32.at("x").data(), y.data());
                     Expected e;
                     // tanh, sigmoid: float exp/tanh (< 2 ulp = 4 u on host and device) plus at
                     // most two roundings and the reference's: 8 u of |y|; the absolute term
                     // admits subnormal results (sigmoid(-100) ~ 4e-44).
                     e.f32["y"] = exact ? exactly(y) : within(y, abs_of(y), 8, 1e-38);
                     return e;
                   }});
  table.push_back(
      {"activation_backward", name, false, false,
       [act, count] {
         Arrays a;
         std::vector<float> y(count);
         ref::activation_forward(act, count, activation_inputs(count, 72).data(), y.data());
         a.f32["y"] = y;  // a forward output: tanh in [-1, 1], sigmoid in [0, 1]
         a.f32["dy"] = random_values(count, 73);
         a.f32["dx"] = nan_values(count);
         return a;
       },
       [act, count](Ops& ops, BackendArrays& a, KernelMode) {
         ops.activation_backward(act, count, a.f32("y"), a.f32("dy"), a.f32("dx"));
       },
       [act, count, exact](const Arrays& a) {
         const std::vector<float>&y = a.f32.at("y"), &dy = a.f32.at("dy");
         std::vector<float> dx(count), scale(count);
         ref::activation_backward(act, count, y.data(), dy.data(), dx.data());
         // dy (1 - y y) and dy (y (1 - y)): three roundings and the reference's, of terms whose
         // magnitudes sum to |dy| (1 + y^2) and |dy| |y| (1 + |y|).
         for (std::int64_t i = 0; i < count; ++i) {
           const float m = std::abs(y[i]);
           scale[i] = std::abs(dy[i]) * (act == Activation::tanh ? 1 + m * m : m * (1 + m));
         }
         Expected e;
         e.f32["dx"] = exact ? exactly(dx) : within(dx, scale, 4);
         return e;
       }});
}

// Dropout: bit for bit the reference's mask and values (an integer keep rule and one product).
void add_dropout(std::vector<OpCase>& table, double rate, std::int64_t count) {
  const auto threshold = static_cast<std::uint32_t>(std::lround(rate * 16777216.0));
  const float scale = float(1.0 / (1.0 - rate));
  const ra::rng::PhiloxKey key{0xD0u, 7u};
  const std::uint64_t draw = 12;
  const std::string name = "rate " + std::to_string(rate).substr(0, 4) + ", " + count_name(count);
  table.push_back({"dropout_forward", name, false, false,
                   [count] {
                     Arrays a;
                     a.f32["x"] = random_values(count, 81);
                     a.f32["y"] = nan_values(count);
                     a.u8["mask"].assign(std::size_t(count), 7);
                     return a;
                   },
                   [=](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.dropout_forward(count, threshold, scale, key, draw, a.f32("x"), a.f32("y"),
                                         a.u8("mask"));
                   },
                   [=](const Arrays& a) {
                     std::vector<float> y(count);
                     Expected e;
                     e.u8["mask"].resize(count);
                     ref::dropout_forward(count, threshold, scale, key, draw, a.f32.at("x").data(),
                                          y.data(), e.u8["mask"].data());
                     e.f32["y"] = exactly(y);
                     return e;
                   }});
  table.push_back({"dropout_backward", name, false, false,
                   [count] {
                     Arrays a;
                     a.f32["dy"] = random_values(count, 82);
                     a.f32["dx"] = nan_values(count);
                     const std::vector<float> coin = random_values(count, 83);
                     for (float c : coin) a.u8["mask"].push_back(c > 0 ? 1 : 0);
                     return a;
                   },
                   [=](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.dropout_backward(count, scale, a.u8("mask"), a.f32("dy"), a.f32("dx"));
                   },
                   [=](const Arrays& a) {
                     std::vector<float> dx(count);
                     ref::dropout_backward(count, scale, a.u8.at("mask").data(),
                                           a.f32.at("dy").data(), dx.data());
                     Expected e;
                     e.f32["dx"] = exactly(dx);
                     return e;
                   }});
}

// The residual add: one float add per element, the reference's double sum rounded once: exactly
// the same value (a + b of two floats rounds once either way).
void add_residual_add(std::vector<OpCase>& table, std::int64_t count) {
  table.push_back({"residual_add", count_name(count), false, false,
                   [count] {
                     Arrays a;
                     a.f32["a"] = random_values(count, 84);
                     a.f32["b"] = random_values(count, 85, -100.0f, 100.0f);
                     a.f32["y"] = nan_values(count);
                     return a;
                   },
                   [count](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.residual_add(count, a.f32("a"), a.f32("b"), a.f32("y"));
                   },
                   [count](const Arrays& a) {
                     std::vector<float> y(count);
                     ref::residual_add(count, a.f32.at("a").data(), a.f32.at("b").data(), y.data());
                     Expected e;
                     e.f32["y"] = exactly(y);
                     return e;
                   }});
}

}  // namespace

void add_elementwise_cases(std::vector<OpCase>& table) {
  for (const auto& a : kActivations) {
    for (const std::int64_t count : kCounts) add_activations(table, a.act, a.name, count);
  }
  for (const std::int64_t count : kCounts) add_residual_add(table, count);
  for (const double rate : {0.0, 0.25, 0.5}) {
    for (const std::int64_t count : kCounts) add_dropout(table, rate, count);
  }
}

}  // namespace ops_test
