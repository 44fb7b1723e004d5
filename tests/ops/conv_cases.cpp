// Convolution cases: conv2d_forward, conv2d_backward_data, conv2d_backward_filter,
// conv2d_backward_bias, conv2d_backward_filter_bias on shapes that stress every edge (1x1,
// strides, asymmetric "same" padding, padding beyond the kernel, rectangular kernels, batch 1,
// sizes no multiple of any SIMD tile, a reduction deeper than one GEMM k block, uneven chunks).
#include "backend/backend_test_util.h"
#include "backend/cpu/reference/reference_ops.h"
#include "ops/case_support.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::backend::Activation;
using ra::backend::ConvGeometry;

std::vector<test::ConvCase> conv_shapes() {
  std::vector<test::ConvCase> shapes = test::conv_cases();
  shapes.push_back({"3x3, pad 3 > kernel", test::conv(2, 3, 6, 7, 5, 3, 3, 1, 1, 3, 3, 3, 3)});
  shapes.push_back({"MNIST conv1, batch 8", test::conv(8, 1, 28, 28, 32, 3, 3)});
  return shapes;
}

// x is a relu output (so it can gate the data gradient), w, b and dy are uniform in [-1, 1).
Arrays conv_inputs(const ConvGeometry& g, std::uint32_t seed) {
  Arrays a;
  a.f32["x"] = relu_of(random_values(g.x_size(), seed));
  a.f32["w"] = random_values(g.w_size(), seed + 1);
  a.f32["b"] = random_values(g.k, seed + 2);
  a.f32["dy"] = random_values(g.y_size(), seed + 3);
  return a;
}

// Terms of each reduction: an output sums C*R*S products (+ bias); an input element receives at
// most K*R*S; a filter tap and a bias sum over N*P*Q outputs.
std::int64_t forward_terms(const ConvGeometry& g) {
  return std::int64_t(g.c) * g.r * g.s + 1;
}
std::int64_t data_terms(const ConvGeometry& g) {
  return std::int64_t(g.k) * g.r * g.s;
}
std::int64_t batch_terms(const ConvGeometry& g) {
  return std::int64_t(g.n) * g.p * g.q;
}

void add_forward(std::vector<OpCase>& table, const std::string& name, const ConvGeometry& g) {
  for (const bool with_bias : {true, false}) {
    // Relu commutes with the bound (1-Lipschitz), so the two variants share the tolerance.
    const Activation act = with_bias ? Activation::none : Activation::relu;
    table.push_back({"conv2d_forward", name + (with_bias ? ", bias" : ", no bias, relu"), false,
                     true,
                     [g] {
                       Arrays a = conv_inputs(g, 11);
                       a.f32["y"] = nan_values(g.y_size());
                       return a;
                     },
                     [g, with_bias, act](Ops& ops, BackendArrays& a, KernelMode) {
                       ops.conv2d_forward(g, a.f32("x"), a.f32("w"),
                                          with_bias ? a.f32("b") : nullptr, act, a.f32("y"));
                     },
                     [g, with_bias, act](const Arrays& a) {
                       const auto ax = abs_of(a.f32.at("x")), aw = abs_of(a.f32.at("w")),
                                  ab = abs_of(a.f32.at("b"));
                       std::vector<float> y(g.y_size()), scale(g.y_size());
                       ref::conv2d_forward(g, a.f32.at("x").data(), a.f32.at("w").data(),
                                           with_bias ? a.f32.at("b").data() : nullptr, y.data());
                       ref::conv2d_forward(g, ax.data(), aw.data(), with_bias ? ab.data() : nullptr,
                                           scale.data());
                       if (act == Activation::relu) y = relu_of(y);
                       Expected e;
                       e.f32["y"] = within(y, scale, sum_units(forward_terms(g)));
                       return e;
                     }});
  }
}

void add_backward_data(std::vector<OpCase>& table, const std::string& name, const ConvGeometry& g) {
  for (const bool gated : {false, true}) {
    table.push_back({"conv2d_backward_data", name + (gated ? ", relu gate" : ""), true, true,
                     [g] {
                       Arrays a = conv_inputs(g, 23);
                       a.f32["dx"] = nan_values(g.x_size());
                       return a;
                     },
                     [g, gated](Ops& ops, BackendArrays& a, KernelMode mode) {
                       ops.conv2d_backward_data(g, a.f32("dy"), a.f32("w"),
                                                gated ? a.f32("x") : nullptr, a.f32("dx"), mode);
                     },
                     [g, gated](const Arrays& a) {
                       const auto ady = abs_of(a.f32.at("dy")), aw = abs_of(a.f32.at("w"));
                       std::vector<float> dx(g.x_size()), scale(g.x_size());
                       ref::conv2d_backward_data(g, a.f32.at("dy").data(), a.f32.at("w").data(),
                                                 dx.data());
                       ref::conv2d_backward_data(g, ady.data(), aw.data(), scale.data());
                       if (gated) {
                         const std::vector<float>& gate = a.f32.at("x");
                         for (std::size_t i = 0; i < dx.size(); ++i) {
                           if (!(gate[i] > 0.0f)) dx[i] = scale[i] = 0.0f;
                         }
                       }
                       Expected e;
                       e.f32["dx"] = within(dx, scale, sum_units(data_terms(g)));
                       return e;
                     }});
  }
}

// dw and db of the reference, with their scales.
void reference_weight_grads(const ConvGeometry& g, const Arrays& a, Expected& e, bool filter,
                            bool bias) {
  const auto ax = abs_of(a.f32.at("x")), ady = abs_of(a.f32.at("dy"));
  if (filter) {
    std::vector<float> dw(g.w_size()), scale(g.w_size());
    ref::conv2d_backward_filter(g, a.f32.at("x").data(), a.f32.at("dy").data(), dw.data());
    ref::conv2d_backward_filter(g, ax.data(), ady.data(), scale.data());
    e.f32["dw"] = within(dw, scale, sum_units(batch_terms(g)));
  }
  if (bias) {
    std::vector<float> db(g.k), scale(g.k);
    ref::conv2d_backward_bias(g, a.f32.at("dy").data(), db.data());
    ref::conv2d_backward_bias(g, ady.data(), scale.data());
    e.f32["db"] = within(db, scale, sum_units(batch_terms(g)));
  }
}

void add_weight_gradients(std::vector<OpCase>& table, const std::string& name,
                          const ConvGeometry& g) {
  const auto inputs = [g] {
    Arrays a = conv_inputs(g, 29);
    a.f32["dw"] = nan_values(g.w_size());
    a.f32["db"] = nan_values(g.k);
    return a;
  };
  table.push_back({"conv2d_backward_filter", name, true, true, inputs,
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.conv2d_backward_filter(g, a.f32("x"), a.f32("dy"), a.f32("dw"), mode);
                   },
                   [g](const Arrays& a) {
                     Expected e;
                     reference_weight_grads(g, a, e, true, false);
                     return e;
                   }});
  table.push_back({"conv2d_backward_bias", name, true, true, inputs,
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.conv2d_backward_bias(g, a.f32("dy"), a.f32("db"), mode);
                   },
                   [g](const Arrays& a) {
                     Expected e;
                     reference_weight_grads(g, a, e, false, true);
                     return e;
                   }});
  table.push_back({"conv2d_backward_filter_bias", name, true, true, inputs,
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.conv2d_backward_filter_bias(g, a.f32("x"), a.f32("dy"), a.f32("dw"),
                                                     a.f32("db"), mode, mode);
                   },
                   [g](const Arrays& a) {
                     Expected e;
                     reference_weight_grads(g, a, e, true, true);
                     return e;
                   }});
}

}  // namespace

void add_conv_cases(std::vector<OpCase>& table) {
  for (const test::ConvCase& shape : conv_shapes()) {
    add_forward(table, shape.name, shape.g);
    add_backward_data(table, shape.name, shape.g);
    add_weight_gradients(table, shape.name, shape.g);
  }
  // Filter and bias gradients whose chunk plans differ (the CPU backend then makes two passes).
  add_weight_gradients(table, "filter and bias chunk plans differ",
                       test::conv(64, 64, 5, 5, 256, 3, 3));
}

}  // namespace ops_test
