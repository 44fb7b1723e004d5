// Per-channel cases: batchnorm_forward_training, batchnorm_forward_training_activation (with relu:
// the CPU backend's fused pass), batchnorm_forward_inference, batchnorm_backward,
// batchnorm_backward_add, global_avgpool_forward, global_avgpool_backward.
// Planes of one pixel, planes shorter than the kernels' 16 lanes, whole lanes with a tail, many
// planes a task and several tasks a channel (backend/cpu/cpu_channel.cpp), and inputs far from
// zero (the two-pass variance).
//
// Tolerances (op_case.h). A channel sum of m = N*H*W float terms is a sum of N plane sums of H*W
// terms each, in float, then added in double (deterministic) or in float atomics
// (nondeterministic): within (H*W + N + 2) u of the sum of |terms|. Call that S units.
//   mean: S units of mean|x|. Its error d reaches the variance only at second order (the centred
//   squares' sum is flat in the mean at the mean): m d^2 / var of relative error, counted below.
//   inv_std, y, running variance: S + a few units for the roundings of each formula, plus that
//   second-order term; the scale of y covers (x - mean) and the mean's own error (mean|x|).
//   backward: the sums of dy and dy (x - mean) are S-unit sums; dx adds the four roundings of its
//   formula and its coefficients'.
#include <algorithm>
#include <cmath>

#include "backend/cpu/reference/reference_ops.h"
#include "ops/case_support.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::backend::ChannelGeometry;

struct ChannelShape {
  const char* name;
  ChannelGeometry g;
  float offset;  // added to x: statistics far from zero
};

const ChannelShape kChannelShapes[] = {
    {"2x3x1x1 (one pixel a plane)", {2, 3, 1, 1}, 0.0f},
    {"4x5x3x3 (planes shorter than 16 lanes)", {4, 5, 3, 3}, 0.0f},
    {"3x2x17x19 (whole lanes and a tail)", {3, 2, 17, 19}, 0.0f},
    {"3x2x17x19, x around 4", {3, 2, 17, 19}, 4.0f},
    {"64x8x8x8 (many planes a task)", {64, 8, 8, 8}, 0.0f},
    {"8x4x64x64 (several tasks a channel)", {8, 4, 64, 64}, 0.0f},
};

constexpr float kMomentum = 0.1f, kEpsilon = 1e-3f;

Arrays channel_inputs(const ChannelShape& shape) {
  const ChannelGeometry& g = shape.g;
  Arrays a;
  a.f32["x"] = random_values(g.x_size(), 91, shape.offset - 1.0f, shape.offset + 1.0f);
  a.f32["dy"] = random_values(g.x_size(), 92);
  a.f32["gamma"] = random_values(g.c, 93, -1.5f, 1.5f);
  a.f32["beta"] = random_values(g.c, 94);
  a.f32["running_mean"] = random_values(g.c, 95);
  a.f32["running_var"] = random_values(g.c, 96, 0.5f, 2.0f);
  a.f32["dpooled"] = random_values(g.planes(), 97);  // global average pooling's [N, C]
  a.f32["pooled"] = nan_values(g.planes());
  for (const char* out : {"y", "dx"}) a.f32[out] = nan_values(g.x_size());
  for (const char* out : {"saved_mean", "saved_inv_std", "dgamma", "dbeta"}) {
    a.f32[out] = nan_values(g.c);
  }
  return a;
}

// Per channel, in double: mean, mean |x|, biased variance.
struct ChannelStats {
  std::vector<double> mean, mean_abs, var;
};

ChannelStats channel_stats(const ChannelGeometry& g, const std::vector<float>& x) {
  ChannelStats s{std::vector<double>(g.c), std::vector<double>(g.c), std::vector<double>(g.c)};
  const double m = double(g.n) * double(g.spatial());
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t i = 0; i < g.x_size(); ++i) {
      const std::int64_t c = i / g.spatial() % g.c;
      const double v = x[std::size_t(i)];
      if (pass == 0) {
        s.mean[c] += v / m;
        s.mean_abs[c] += std::abs(v) / m;
      } else {
        s.var[c] += (v - s.mean[c]) * (v - s.mean[c]) / m;
      }
    }
  }
  return s;
}

// S (above): the rounding units of one channel sum.
double sum_units_of(const ChannelGeometry& g) {
  return double(g.spatial() + g.n + 2);
}

// The second-order effect of the mean's error on the variance, in units: max over channels of
// m d^2 / var / u with d = S u mean|x| (the bound of the mean's error).
double mean_error_units(const ChannelGeometry& g, const ChannelStats& s) {
  double worst = 0;
  for (int c = 0; c < g.c; ++c) {
    const double d = sum_units_of(g) * kUnitRoundoff * s.mean_abs[c];
    worst = std::max(worst, d * d / (s.var[c] + kEpsilon) / kUnitRoundoff);
  }
  return worst;
}

Expected training_expected(const ChannelGeometry& g, const Arrays& a) {
  std::vector<float> y(g.x_size()), mean(g.c), inv_std(g.c), rm = a.f32.at("running_mean"),
                                                             rv = a.f32.at("running_var");
  const std::vector<float>&x = a.f32.at("x"), &gamma = a.f32.at("gamma"), &beta = a.f32.at("beta");
  ref::batchnorm_forward_training(g, x.data(), gamma.data(), beta.data(), kMomentum, kEpsilon,
                                  rm.data(), rv.data(), mean.data(), inv_std.data(), y.data());
  const ChannelStats s = channel_stats(g, x);
  const double units = sum_units_of(g) + 8, second_order = mean_error_units(g, s);
  std::vector<float> y_scale(g.x_size()), mean_scale(g.c), rm_scale(g.c), rv_scale(g.c);
  for (int c = 0; c < g.c; ++c) {
    mean_scale[c] = float(s.mean_abs[c]);
    rm_scale[c] =
        float((1 - kMomentum) * std::abs(a.f32.at("running_mean")[c]) + kMomentum * s.mean_abs[c]);
    rv_scale[c] = float((1 - kMomentum) * a.f32.at("running_var")[c] + kMomentum * 2 * s.var[c]);
    for (std::int64_t n = 0; n < g.n; ++n) {
      for (std::int64_t i = 0; i < g.spatial(); ++i) {
        const auto at = std::size_t((n * g.c + c) * g.spatial() + i);
        y_scale[at] = float(std::abs(gamma[c]) * inv_std[c] *
                                (std::abs(x[at]) + std::abs(s.mean[c]) + s.mean_abs[c]) +
                            std::abs(beta[c]));
      }
    }
  }
  Expected e;
  e.f32["y"] = within(y, y_scale, units + 4 + second_order);
  e.f32["saved_mean"] = within(mean, mean_scale, units);
  e.f32["saved_inv_std"] = within(inv_std, inv_std, units + second_order);
  e.f32["running_mean"] = within(rm, rm_scale, units);
  e.f32["running_var"] = within(rv, rv_scale, units + second_order);
  return e;
}

void add_training(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"batchnorm_forward_training", shape.name, true, false,
                   [shape] { return channel_inputs(shape); },
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.batchnorm_forward_training(g, a.f32("x"), a.f32("gamma"), a.f32("beta"),
                                                    kMomentum, kEpsilon, a.f32("running_mean"),
                                                    a.f32("running_var"), a.f32("saved_mean"),
                                                    a.f32("saved_inv_std"), a.f32("y"), mode);
                   },
                   [g](const Arrays& a) { return training_expected(g, a); }});
}

// The composite with relu: the training forward's expectations, y through relu (which moves no
// value further from the reference's than it was); bn_out may stay unwritten, so is not checked.
void add_training_relu(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"batchnorm_forward_training_activation", std::string(shape.name) + ", relu",
                   true, false,
                   [shape] {
                     Arrays a = channel_inputs(shape);
                     a.f32["bn_out"] = nan_values(shape.g.x_size());
                     return a;
                   },
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.batchnorm_forward_training_activation(
                         g, a.f32("x"), a.f32("gamma"), a.f32("beta"), kMomentum, kEpsilon,
                         a.f32("running_mean"), a.f32("running_var"), a.f32("saved_mean"),
                         a.f32("saved_inv_std"), ra::backend::Activation::relu, a.f32("bn_out"),
                         a.f32("y"), mode);
                   },
                   [g](const Arrays& a) {
                     Expected e = training_expected(g, a);
                     for (double& v : e.f32.at("y").value) v = v > 0 ? v : 0.0;
                     return e;
                   }});
}

void add_inference(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"batchnorm_forward_inference", shape.name, false, false,
                   [shape] { return channel_inputs(shape); },
                   [g](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.batchnorm_forward_inference(g, a.f32("x"), a.f32("gamma"), a.f32("beta"),
                                                     a.f32("running_mean"), a.f32("running_var"),
                                                     kEpsilon, a.f32("y"));
                   },
                   [g](const Arrays& a) {
                     const std::vector<float>&x = a.f32.at("x"), &gamma = a.f32.at("gamma"),
                           &beta = a.f32.at("beta"), &rm = a.f32.at("running_mean"),
                           &rv = a.f32.at("running_var");
                     std::vector<float> y(g.x_size()), scale(g.x_size());
                     ref::batchnorm_forward_inference(g, x.data(), gamma.data(), beta.data(),
                                                      rm.data(), rv.data(), kEpsilon, y.data());
                     for (std::int64_t i = 0; i < g.x_size(); ++i) {
                       const std::int64_t c = i / g.spatial() % g.c;
                       scale[i] = std::abs(gamma[c]) / std::sqrt(rv[c] + kEpsilon) *
                                      (std::abs(x[i]) + std::abs(rm[c])) +
                                  std::abs(beta[c]);
                     }
                     // The scale's sqrt, division and rounding, then a subtraction, a product and a
                     // sum.
                     Expected e;
                     e.f32["y"] = within(y, scale, 8);
                     return e;
                   }});
}

// The backward's inputs: the statistics the training forward saves for x.
Arrays backward_inputs(const ChannelShape& shape) {
  Arrays a = channel_inputs(shape);
  const ChannelGeometry& g = shape.g;
  std::vector<float> y(g.x_size()), rm(g.c), rv(g.c);
  ref::batchnorm_forward_training(
      g, a.f32["x"].data(), a.f32["gamma"].data(), a.f32["beta"].data(), kMomentum, kEpsilon,
      rm.data(), rv.data(), a.f32["saved_mean"].data(), a.f32["saved_inv_std"].data(), y.data());
  return a;
}

Expected backward_expected(const ChannelGeometry& g, const Arrays& a) {
  const std::vector<float>&x = a.f32.at("x"), &dy = a.f32.at("dy"), &gamma = a.f32.at("gamma"),
        &mean = a.f32.at("saved_mean"), &inv_std = a.f32.at("saved_inv_std");
  std::vector<float> dx(g.x_size()), dgamma(g.c), dbeta(g.c);
  ref::batchnorm_backward(g, x.data(), dy.data(), gamma.data(), mean.data(), inv_std.data(),
                          dx.data(), dgamma.data(), dbeta.data());
  const double m = double(g.n) * double(g.spatial());
  std::vector<double> abs_dy(g.c), abs_dy_centered(g.c);
  for (std::int64_t i = 0; i < g.x_size(); ++i) {
    const std::int64_t c = i / g.spatial() % g.c;
    abs_dy[c] += std::abs(dy[i]);
    abs_dy_centered[c] += std::abs(dy[i]) * (std::abs(x[i]) + std::abs(mean[c]));
  }
  std::vector<float> dx_scale(g.x_size()), dgamma_scale(g.c), dbeta_scale(g.c);
  for (int c = 0; c < g.c; ++c) {
    dbeta_scale[c] = float(abs_dy[c]);
    dgamma_scale[c] = float(inv_std[c] * abs_dy_centered[c]);
  }
  for (std::int64_t i = 0; i < g.x_size(); ++i) {
    const std::int64_t c = i / g.spatial() % g.c;
    const double inv = inv_std[c];
    dx_scale[i] =
        float(std::abs(gamma[c]) * inv *
              (std::abs(dy[i]) + abs_dy[c] / m +
               (std::abs(x[i]) + std::abs(mean[c])) * inv * inv * abs_dy_centered[c] / m));
  }
  const double units = sum_units_of(g) + 4;
  Expected e;
  e.f32["dbeta"] = within(dbeta, dbeta_scale, units);
  e.f32["dgamma"] = within(dgamma, dgamma_scale, units + 2);
  e.f32["dx"] = within(dx, dx_scale, units + 8);
  return e;
}

void add_backward(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"batchnorm_backward", shape.name, true, false,
                   [shape] { return backward_inputs(shape); },
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.batchnorm_backward(g, a.f32("x"), a.f32("dy"), a.f32("gamma"),
                                            a.f32("saved_mean"), a.f32("saved_inv_std"),
                                            a.f32("dx"), a.f32("dgamma"), a.f32("dbeta"), mode);
                   },
                   [g](const Arrays& a) { return backward_expected(g, a); }});
}

// The composite with a residual's addend: the backward's expectations, dx plus the addend (one
// more rounding, of a value within |dx| + |addend|).
void add_backward_add(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"batchnorm_backward_add", shape.name, true, false,
                   [shape] {
                     Arrays a = backward_inputs(shape);
                     a.f32["addend"] = random_values(shape.g.x_size(), 98);
                     return a;
                   },
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.batchnorm_backward_add(g, a.f32("x"), a.f32("dy"), a.f32("gamma"),
                                                a.f32("saved_mean"), a.f32("saved_inv_std"),
                                                a.f32("addend"), a.f32("dx"), a.f32("dgamma"),
                                                a.f32("dbeta"), mode);
                   },
                   [g](const Arrays& a) {
                     Expected e = backward_expected(g, a);
                     FloatExpectation& dx = e.f32.at("dx");
                     const std::vector<float>& addend = a.f32.at("addend");
                     for (std::size_t i = 0; i < dx.value.size(); ++i) {
                       dx.value[i] += addend[i];
                       dx.scale[i] += std::abs(addend[i]);
                     }
                     dx.units += 1;
                     return e;
                   }});
}

// Global average pooling: a plane's sum of H*W terms and a division (S units of mean|x|), and its
// backward, one division per element (one unit: the reference's double quotient rounded once).
void add_global_avgpool(std::vector<OpCase>& table, const ChannelShape& shape) {
  const ChannelGeometry g = shape.g;
  table.push_back({"global_avgpool_forward", shape.name, false, false,
                   [shape] { return channel_inputs(shape); },
                   [g](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.global_avgpool_forward(g, a.f32("x"), a.f32("pooled"));
                   },
                   [g](const Arrays& a) {
                     std::vector<float> y(g.planes()), scale(g.planes());
                     ref::global_avgpool_forward(g, a.f32.at("x").data(), y.data());
                     ref::global_avgpool_forward(g, abs_of(a.f32.at("x")).data(), scale.data());
                     Expected e;
                     e.f32["pooled"] = within(y, scale, double(g.spatial() + 2));
                     return e;
                   }});
  table.push_back({"global_avgpool_backward", shape.name, false, false,
                   [shape] { return channel_inputs(shape); },
                   [g](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.global_avgpool_backward(g, a.f32("dpooled"), a.f32("dx"));
                   },
                   [g](const Arrays& a) {
                     std::vector<float> dx(g.x_size());
                     ref::global_avgpool_backward(g, a.f32.at("dpooled").data(), dx.data());
                     Expected e;
                     e.f32["dx"] = within(dx, abs_of(dx), 1);
                     return e;
                   }});
}

}  // namespace

void add_channel_cases(std::vector<OpCase>& table) {
  for (const ChannelShape& shape : kChannelShapes) add_training(table, shape);
  for (const ChannelShape& shape : kChannelShapes) add_training_relu(table, shape);
  for (const ChannelShape& shape : kChannelShapes) add_inference(table, shape);
  for (const ChannelShape& shape : kChannelShapes) add_backward(table, shape);
  for (const ChannelShape& shape : kChannelShapes) add_backward_add(table, shape);
  for (const ChannelShape& shape : kChannelShapes) add_global_avgpool(table, shape);
}

}  // namespace ops_test
