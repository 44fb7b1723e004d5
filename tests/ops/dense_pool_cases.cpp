// Dense cases (dense_forward, dense_backward_data, dense_backward_weight, dense_backward_bias) and
// max-pool cases (maxpool2d_forward, maxpool2d_backward).
#include "backend/backend_test_util.h"
#include "backend/cpu/reference/reference_ops.h"
#include "ops/case_support.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::backend::Activation;
using ra::backend::DenseGeometry;
using ra::backend::PoolGeometry;

// ---- dense ----

struct DenseShape {
  const char* name;
  DenseGeometry g;
};

// One element; depth past one GEMM k block (256); edge tiles everywhere; dx wider than one n
// block; uneven reduction chunks; several tiles of dw.
const DenseShape kDenseShapes[] = {
    {"1 -> 1, batch 1", {1, 1, 1}},
    {"17 -> 5, batch 3", {3, 17, 5}},
    {"300 -> 13 (depth past one k block), batch 7", {7, 300, 13}},
    {"65 -> 129 (edge tiles everywhere), batch 33", {33, 65, 129}},
    {"1030 -> 40 (dx wider than one n block), batch 2", {2, 1030, 40}},
    {"20 -> 33, batch 37 (uneven chunks)", {37, 20, 33}},
    {"9 -> 300 (several tiles of dw), batch 70", {70, 9, 300}},
};

Arrays dense_inputs(const DenseGeometry& g) {
  Arrays a;
  a.f32["x"] = random_values(std::int64_t(g.n) * g.in, 51);
  a.f32["w"] = random_values(std::int64_t(g.out) * g.in, 52);
  a.f32["b"] = random_values(g.out, 53);
  a.f32["dy"] = random_values(std::int64_t(g.n) * g.out, 54);
  a.f32["y"] = nan_values(std::int64_t(g.n) * g.out);
  a.f32["dx"] = nan_values(std::int64_t(g.n) * g.in);
  a.f32["dw"] = nan_values(std::int64_t(g.out) * g.in);
  a.f32["db"] = nan_values(g.out);
  return a;
}

// Reference `output` of `f` on the arrays and on their absolute values (its scale).
template <class F>
FloatExpectation reference_of(const Arrays& a, std::int64_t size, std::int64_t terms, F f) {
  Arrays abs_arrays = a;
  for (auto& [name, values] : abs_arrays.f32) values = abs_of(values);
  std::vector<float> value(size), scale(size);
  f(a, value.data());
  f(abs_arrays, scale.data());
  return within(value, scale, sum_units(terms));
}

void add_dense_shape(std::vector<OpCase>& table, const std::string& name, const DenseGeometry& g) {
  const auto inputs = [g] { return dense_inputs(g); };
  for (const bool with_bias : {true, false}) {
    const Activation act = with_bias ? Activation::none : Activation::relu;
    table.push_back(
        {"dense_forward", name + (with_bias ? ", bias" : ", no bias, relu"), false, false, inputs,
         [g, with_bias, act](Ops& ops, BackendArrays& a, KernelMode) {
           ops.dense_forward(g, a.f32("x"), a.f32("w"), with_bias ? a.f32("b") : nullptr, act,
                             a.f32("y"));
         },
         [g, with_bias, act](const Arrays& a) {
           Expected e;
           e.f32["y"] =
               reference_of(a, std::int64_t(g.n) * g.out, g.in + 1, [&](const Arrays& v, float* y) {
                 ref::dense_forward(g, v.f32.at("x").data(), v.f32.at("w").data(),
                                    with_bias ? v.f32.at("b").data() : nullptr, y);
               });
           if (act == Activation::relu) {
             for (double& y : e.f32["y"].value) y = y > 0 ? y : 0.0;
           }
           return e;
         }});
  }
  table.push_back(
      {"dense_backward_data", name, true, false, inputs,
       [g](Ops& ops, BackendArrays& a, KernelMode mode) {
         ops.dense_backward_data(g, a.f32("dy"), a.f32("w"), a.f32("dx"), mode);
       },
       [g](const Arrays& a) {
         Expected e;
         e.f32["dx"] =
             reference_of(a, std::int64_t(g.n) * g.in, g.out, [&](const Arrays& v, float* dx) {
               ref::dense_backward_data(g, v.f32.at("dy").data(), v.f32.at("w").data(), dx);
             });
         return e;
       }});
  table.push_back(
      {"dense_backward_weight", name, true, false, inputs,
       [g](Ops& ops, BackendArrays& a, KernelMode mode) {
         ops.dense_backward_weight(g, a.f32("x"), a.f32("dy"), a.f32("dw"), mode);
       },
       [g](const Arrays& a) {
         Expected e;
         e.f32["dw"] =
             reference_of(a, std::int64_t(g.out) * g.in, g.n, [&](const Arrays& v, float* dw) {
               ref::dense_backward_weight(g, v.f32.at("x").data(), v.f32.at("dy").data(), dw);
             });
         return e;
       }});
  table.push_back({"dense_backward_bias", name, true, false, inputs,
                   [g](Ops& ops, BackendArrays& a, KernelMode mode) {
                     ops.dense_backward_bias(g, a.f32("dy"), a.f32("db"), mode);
                   },
                   [g](const Arrays& a) {
                     Expected e;
                     e.f32["db"] = reference_of(a, g.out, g.n, [&](const Arrays& v, float* db) {
                       ref::dense_backward_bias(g, v.f32.at("dy").data(), db);
                     });
                     return e;
                   }});
}

// ---- max-pool ----

struct PoolShape {
  const char* name;
  PoolGeometry g;
  bool ties;  // inputs from {-1, 0, 1}: windows full of ties (the first maximum wins)
};

// The Keras 2x2/2 pool (the CPU's fast path, 16 windows per AVX-512 step: 35 columns leave a
// tail), odd sizes the pool crops, overlapping windows, padding (which never wins), rectangular.
// A function: built during static initialization (see conv_pool_cases.cpp).
std::vector<PoolShape> pool_shapes() {
  return {
      {"2x2/2, 2x3x34x35", test::pool(2, 3, 34, 35, 2, 2, 2, 2), false},
      {"2x2/2, ties", test::pool(2, 3, 34, 35, 2, 2, 2, 2), true},
      {"2x2/2, odd 7x9 plane", test::pool(3, 2, 7, 9, 2, 2, 2, 2), false},
      {"3x3/2 overlapping", test::pool(2, 3, 9, 10, 3, 3, 2, 2), false},
      {"3x3/1 pad 1, ties", test::pool(1, 4, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1), true},
      {"3x3/2 pad 1, 40 planes", test::pool(5, 8, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1), false},
      {"2x3 stride (2,1), pads t1 l2 b0 r2", test::pool(2, 2, 7, 8, 2, 3, 2, 1, 1, 2, 0, 2), false},
  };
}

Arrays pool_inputs(const PoolShape& s) {
  Arrays a;
  a.f32["x"] = s.ties ? tied_values(s.g.x_size(), 61) : random_values(s.g.x_size(), 61);
  a.f32["y"] = nan_values(s.g.y_size());
  a.i32["argmax"].assign(std::size_t(s.g.y_size()), -7);
  return a;
}

void add_pool_shape(std::vector<OpCase>& table, const PoolShape& s) {
  const PoolGeometry g = s.g;
  table.push_back({"maxpool2d_forward", s.name, false, false, [s] { return pool_inputs(s); },
                   [g](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.maxpool2d_forward(g, a.f32("x"), a.f32("y"), a.i32("argmax"));
                   },
                   [g](const Arrays& a) {
                     std::vector<float> y(g.y_size());
                     std::vector<std::int32_t> argmax(g.y_size());
                     ref::maxpool2d_forward(g, a.f32.at("x").data(), y.data(), argmax.data());
                     Expected e;
                     e.f32["y"] = exactly(y);
                     e.i32["argmax"] = argmax;
                     return e;
                   }});
  // Each input element receives the gradients of the windows it wins: at most
  // ceil(pool / stride) per axis.
  const std::int64_t terms = std::int64_t((g.pool_h + g.stride_h - 1) / g.stride_h) *
                             ((g.pool_w + g.stride_w - 1) / g.stride_w);
  for (const bool gated : {false, true}) {
    table.push_back(
        {"maxpool2d_backward", std::string(s.name) + (gated ? ", relu gate" : ""), true, false,
         [s] {
           Arrays a = pool_inputs(s);
           std::vector<float> y(s.g.y_size());
           std::vector<std::int32_t> argmax(s.g.y_size());
           ref::maxpool2d_forward(s.g, a.f32.at("x").data(), y.data(), argmax.data());
           a.f32["y"] = y;
           a.i32["argmax"] = argmax;
           a.f32["dy"] = random_values(s.g.y_size(), 62);
           a.f32["dx"] = nan_values(s.g.x_size());
           return a;
         },
         [g, gated](Ops& ops, BackendArrays& a, KernelMode mode) {
           ops.maxpool2d_backward(g, a.f32("dy"), a.i32("argmax"), gated ? a.f32("y") : nullptr,
                                  a.f32("dx"), mode);
         },
         [g, gated, terms](const Arrays& a) {
           std::vector<float> dy = a.f32.at("dy");
           if (gated) {
             for (std::size_t i = 0; i < dy.size(); ++i) {
               if (!(a.f32.at("y")[i] > 0.0f)) dy[i] = 0.0f;
             }
           }
           const std::vector<float> ady = abs_of(dy);
           std::vector<float> dx(g.x_size()), scale(g.x_size());
           ref::maxpool2d_backward(g, dy.data(), a.i32.at("argmax").data(), dx.data());
           ref::maxpool2d_backward(g, ady.data(), a.i32.at("argmax").data(), scale.data());
           Expected e;
           e.f32["dx"] = within(dx, scale, sum_units(terms));
           return e;
         }});
  }
}

}  // namespace

void add_dense_cases(std::vector<OpCase>& table) {
  for (const DenseShape& s : kDenseShapes) add_dense_shape(table, s.name, s.g);
}

void add_pool_cases(std::vector<OpCase>& table) {
  for (const PoolShape& s : pool_shapes()) add_pool_shape(table, s);
}

}  // namespace ops_test
