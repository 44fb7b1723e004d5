// Conv + max-pool cases: conv2d_forward_maxpool and conv2d_backward_maxpool, the two-op and
// four-op compositions the CPU backend fuses for a stride-1 conv under a 2x2/2 pool (odd conv
// outputs the pool crops, same padding, batch 1, filter counts no multiple of a tile) and runs as
// separate calls elsewhere (overlapping pools, strided convs). The reference composes the plain
// reference ops.
#include "backend/backend_test_util.h"
#include "backend/cpu/reference/reference_ops.h"
#include "ops/case_support.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::backend::Activation;
using ra::backend::ConvGeometry;
using ra::backend::PoolGeometry;

struct ConvPoolShape {
  const char* name;
  ConvGeometry g;
  int pool, stride;
  PoolGeometry pool_geometry() const {
    return test::pool(g.n, g.k, g.p, g.q, pool, pool, stride, stride);
  }
};

// A function, not a namespace-scope array: the table is built during static initialization (the
// tests register one Catch case per op), before other files' dynamic initializers may have run.
std::vector<ConvPoolShape> shapes() {
  return {
      {"Keras conv2 shape, batch 1", test::conv(1, 32, 26, 26, 64, 3, 3), 2, 2},
      {"odd 7x9 conv output, 5 filters", test::conv(2, 3, 9, 11, 5, 3, 3), 2, 2},
      {"same padding, batch 1, 13 filters", test::conv(1, 4, 8, 10, 13, 3, 3, 1, 1, 1, 1, 1, 1), 2,
       2},
      {"3x3, pad 3 > kernel", test::conv(2, 3, 6, 7, 5, 3, 3, 1, 1, 3, 3, 3, 3), 2, 2},
      {"3x3/2 pool (overlapping)", test::conv(2, 3, 9, 9, 6, 3, 3), 3, 2},
      {"strided conv", test::conv(2, 3, 11, 11, 6, 3, 3, 2, 2), 2, 2},
  };
}

// The reference conv output (relu(conv + bias)), its scale (the same over absolute values) and
// the pooled output with its argmax.
struct ReferenceForward {
  std::vector<float> conv_y, conv_scale, pooled;
  std::vector<std::int32_t> argmax;
};

ReferenceForward reference_forward(const ConvPoolShape& s, const Arrays& a) {
  const ConvGeometry& g = s.g;
  const PoolGeometry pg = s.pool_geometry();
  ReferenceForward r{std::vector<float>(g.y_size()), std::vector<float>(g.y_size()),
                     std::vector<float>(pg.y_size()), std::vector<std::int32_t>(pg.y_size())};
  const auto ax = abs_of(a.f32.at("x")), aw = abs_of(a.f32.at("w")), ab = abs_of(a.f32.at("b"));
  ref::conv2d_forward(g, a.f32.at("x").data(), a.f32.at("w").data(), a.f32.at("b").data(),
                      r.conv_y.data());
  ref::conv2d_forward(g, ax.data(), aw.data(), ab.data(), r.conv_scale.data());
  r.conv_y = relu_of(r.conv_y);
  ref::maxpool2d_forward(pg, r.conv_y.data(), r.pooled.data(), r.argmax.data());
  return r;
}

Arrays conv_pool_inputs(const ConvPoolShape& s, std::uint32_t seed) {
  Arrays a;
  a.f32["x"] = relu_of(random_values(s.g.x_size(), seed));
  a.f32["w"] = random_values(s.g.w_size(), seed + 1);
  a.f32["b"] = random_values(s.g.k, seed + 2);
  return a;
}

OpCase forward_case(const ConvPoolShape& s) {
  const std::int64_t terms = std::int64_t(s.g.c) * s.g.r * s.g.s + 1;
  return {"conv2d_forward_maxpool",
          std::string(s.name) + ", bias, relu",
          false,
          true,
          [s] {
            Arrays a = conv_pool_inputs(s, 41);
            a.f32["conv_out"] = nan_values(s.g.y_size());  // may stay unwritten: not checked
            a.f32["y"] = nan_values(s.pool_geometry().y_size());
            a.i32["argmax"].assign(std::size_t(s.pool_geometry().y_size()), -7);
            return a;
          },
          [s](Ops& ops, BackendArrays& a, KernelMode) {
            ops.conv2d_forward_maxpool(s.g, a.f32("x"), a.f32("w"), a.f32("b"), Activation::relu,
                                       s.pool_geometry(), a.f32("conv_out"), a.f32("y"),
                                       a.i32("argmax"));
          },
          [s, terms](const Arrays& a) {
            const ReferenceForward r = reference_forward(s, a);
            std::vector<float> scale(r.pooled.size());
            for (std::size_t i = 0; i < scale.size(); ++i) scale[i] = r.conv_scale[r.argmax[i]];
            Expected e;
            e.f32["y"] = within(r.pooled, scale, sum_units(terms));
            // Exact: the seeded inputs have no window whose two best values lie within rounding.
            e.i32["argmax"] = r.argmax;
            return e;
          }};
}

OpCase backward_case(const ConvPoolShape& s, bool with_bias_and_dx) {
  return {"conv2d_backward_maxpool",
          std::string(s.name) + (with_bias_and_dx ? ", bias, dx, relu gates" : ", no bias, no dx"),
          true,
          true,
          [s] {
            Arrays a = conv_pool_inputs(s, 43);
            // The forward pass's pooled output (the pool's gate) and argmax, as inputs.
            const ReferenceForward r = reference_forward(s, a);
            a.f32["pooled"] = r.pooled;
            a.i32["argmax"] = r.argmax;
            a.f32["pooled_dy"] = random_values(s.pool_geometry().y_size(), 44);
            a.f32["conv_dy"] = nan_values(s.g.y_size());  // may stay unwritten: not checked
            a.f32["dx"] = nan_values(s.g.x_size());
            a.f32["dw"] = nan_values(s.g.w_size());
            a.f32["db"] = nan_values(s.g.k);
            return a;
          },
          [s, with_bias_and_dx](Ops& ops, BackendArrays& a, KernelMode mode) {
            ra::backend::ConvPoolBackwardModes modes;
            modes.pool = modes.filter = modes.bias = modes.data = mode;
            ops.conv2d_backward_maxpool(s.g, s.pool_geometry(),
                                        {a.f32("pooled_dy"), a.i32("argmax"), a.f32("pooled")},
                                        a.f32("x"), a.f32("w"), a.f32("x"), a.f32("conv_dy"),
                                        with_bias_and_dx ? a.f32("dx") : nullptr, a.f32("dw"),
                                        with_bias_and_dx ? a.f32("db") : nullptr, modes);
          },
          [s, with_bias_and_dx](const Arrays& a) {
            const ConvGeometry& g = s.g;
            const PoolGeometry pg = s.pool_geometry();
            // conv_dy = the gated pool backward, a sum of at most ceil(pool / stride)^2 gradients.
            std::vector<float> gated(a.f32.at("pooled_dy"));
            for (std::size_t i = 0; i < gated.size(); ++i) {
              if (!(a.f32.at("pooled")[i] > 0.0f)) gated[i] = 0.0f;
            }
            std::vector<float> conv_dy(g.y_size()), conv_dy_abs(g.y_size());
            ref::maxpool2d_backward(pg, gated.data(), a.i32.at("argmax").data(), conv_dy.data());
            const auto gated_abs = abs_of(gated);
            ref::maxpool2d_backward(pg, gated_abs.data(), a.i32.at("argmax").data(),
                                    conv_dy_abs.data());
            const int overlap = (s.pool + s.stride - 1) / s.stride;
            const double pool_units = overlap * overlap;
            const auto ax = abs_of(a.f32.at("x")), aw = abs_of(a.f32.at("w"));
            Expected e;
            std::vector<float> dw(g.w_size()), dw_scale(g.w_size());
            ref::conv2d_backward_filter(g, a.f32.at("x").data(), conv_dy.data(), dw.data());
            ref::conv2d_backward_filter(g, ax.data(), conv_dy_abs.data(), dw_scale.data());
            const std::int64_t batch_terms = std::int64_t(g.n) * g.p * g.q;
            e.f32["dw"] = within(dw, dw_scale, sum_units(batch_terms) + pool_units);
            if (with_bias_and_dx) {
              std::vector<float> db(g.k), db_scale(g.k), dx(g.x_size()), dx_scale(g.x_size());
              ref::conv2d_backward_bias(g, conv_dy.data(), db.data());
              ref::conv2d_backward_bias(g, conv_dy_abs.data(), db_scale.data());
              e.f32["db"] = within(db, db_scale, sum_units(batch_terms) + pool_units);
              ref::conv2d_backward_data(g, conv_dy.data(), a.f32.at("w").data(), dx.data());
              ref::conv2d_backward_data(g, conv_dy_abs.data(), aw.data(), dx_scale.data());
              for (std::size_t i = 0; i < dx.size(); ++i) {
                if (!(a.f32.at("x")[i] > 0.0f)) dx[i] = dx_scale[i] = 0.0f;  // the relu gate
              }
              e.f32["dx"] =
                  within(dx, dx_scale, sum_units(std::int64_t(g.k) * g.r * g.s) + pool_units);
            } else {
              // Outputs not asked for stay untouched.
              e.f32["dx"] = exactly(a.f32.at("dx"));
              e.f32["db"] = exactly(a.f32.at("db"));
            }
            return e;
          }};
}

}  // namespace

void add_conv_pool_cases(std::vector<OpCase>& table) {
  for (const ConvPoolShape& s : shapes()) table.push_back(forward_case(s));
  for (const ConvPoolShape& s : shapes()) {
    table.push_back(backward_case(s, true));
    table.push_back(backward_case(s, false));
  }
}

}  // namespace ops_test
