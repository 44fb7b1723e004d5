// Optimizer arithmetic: three steps of every optimizer on a 3-element parameter, checked against
// (1) values worked out by hand, (2) a plain double-precision implementation of each formula,
// written here independently of lib/optim, and (3) the float outputs of PyTorch 1.13, hard-coded.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace {

using ra::Tensor;
using ra::optim::Optimizer;
using ra::spec::OptimizerSpec;
using ra::spec::OptimizerType;
using Vec3 = std::array<double, 3>;

constexpr Vec3 kInitial = {0.5, -1.25, 2.0};
constexpr std::array<Vec3, 3> kGrads = {{{0.1, -0.2, 0.3}, {-0.4, 0.5, 0.25}, {0.05, 0.6, -0.7}}};

// What the optimizer did: the parameter after each step, and its state after the last step (in
// the order state() lists it).
struct Trajectory {
  std::vector<Vec3> params;
  std::vector<Vec3> state;
};

Vec3 to_vec3(const Tensor& t) {
  return {t[0], t[1], t[2]};
}

Trajectory run_three_steps(Optimizer& optimizer) {
  Tensor value({3}), grad({3});
  for (int i = 0; i < 3; ++i) value[i] = static_cast<float>(kInitial[i]);
  const std::vector<ra::optim::Parameter> params = {{"w", &value, &grad}};
  Trajectory out;
  for (const Vec3& g : kGrads) {
    for (int i = 0; i < 3; ++i) grad[i] = static_cast<float>(g[i]);
    optimizer.step(params);
    out.params.push_back(to_vec3(value));
  }
  for (const auto& [name, tensor] : optimizer.state()) out.state.push_back(to_vec3(*tensor));
  return out;
}

Trajectory run_three_steps(const OptimizerSpec& spec) {
  return run_three_steps(*ra::optim::make_optimizer(spec));
}

// ---- plain double references, one per formula (docs/optimizers.md) ---------------------------
double lr_at(const OptimizerSpec& s, int steps_done) {
  return s.lr / (1.0 + s.decay * steps_done);
}

Trajectory reference_sgd(const OptimizerSpec& s) {
  Vec3 p = kInitial, buf{};
  Trajectory out;
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 3; ++i) {
      double g = kGrads[t][i] + s.weight_decay * p[i];
      if (s.momentum != 0.0) {
        buf[i] = t == 0 ? g : s.momentum * buf[i] + (1.0 - s.dampening) * g;
        g = s.nesterov ? g + s.momentum * buf[i] : buf[i];
      }
      p[i] -= lr_at(s, t) * g;
    }
    out.params.push_back(p);
  }
  if (s.momentum != 0.0) out.state = {buf};
  return out;
}

Trajectory reference_adam(const OptimizerSpec& s) {
  Vec3 p = kInitial, m{}, v{};
  Trajectory out;
  for (int t = 1; t <= 3; ++t) {
    for (int i = 0; i < 3; ++i) {
      const double g = kGrads[t - 1][i] + s.weight_decay * p[i];
      m[i] = s.beta1 * m[i] + (1.0 - s.beta1) * g;
      v[i] = s.beta2 * v[i] + (1.0 - s.beta2) * g * g;
      const double m_hat = m[i] / (1.0 - std::pow(s.beta1, t));
      const double v_hat = v[i] / (1.0 - std::pow(s.beta2, t));
      p[i] -= lr_at(s, t - 1) * m_hat / (std::sqrt(v_hat) + s.eps);
    }
    out.params.push_back(p);
  }
  out.state = {m, v};
  return out;
}

Trajectory reference_rmsprop(const OptimizerSpec& s) {
  Vec3 p = kInitial, a{};
  Trajectory out;
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 3; ++i) {
      const double g = kGrads[t][i] + s.weight_decay * p[i];
      a[i] = s.rho * a[i] + (1.0 - s.rho) * g * g;
      p[i] -= lr_at(s, t) * g / (std::sqrt(a[i]) + s.eps);
    }
    out.params.push_back(p);
  }
  out.state = {a};
  return out;
}

Trajectory reference_adadelta(const OptimizerSpec& s) {
  Vec3 p = kInitial, a{}, d{};
  Trajectory out;
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 3; ++i) {
      const double g = kGrads[t][i] + s.weight_decay * p[i];
      a[i] = s.rho * a[i] + (1.0 - s.rho) * g * g;
      const double u = g * std::sqrt(d[i] + s.eps) / std::sqrt(a[i] + s.eps);
      d[i] = s.rho * d[i] + (1.0 - s.rho) * u * u;
      p[i] -= lr_at(s, t) * u;
    }
    out.params.push_back(p);
  }
  out.state = {a, d};
  return out;
}

Trajectory reference(const OptimizerSpec& s) {
  switch (s.type) {
    case OptimizerType::sgd:
      return reference_sgd(s);
    case OptimizerType::adam:
      return reference_adam(s);
    case OptimizerType::rmsprop:
      return reference_rmsprop(s);
    case OptimizerType::adadelta:
      return reference_adadelta(s);
  }
  return {};
}

// Distance in units in the last place between two floats of the same sign.
std::int64_t ulp_distance(float a, float b) {
  return std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(a)) -
                  static_cast<std::int64_t>(std::bit_cast<std::int32_t>(b)));
}

// fp32 vs the double reference: three steps of a few float roundings each, relative 1e-5.
void require_close_to(const Vec3& got, const Vec3& expected, const char* what) {
  for (int i = 0; i < 3; ++i) {
    INFO(what << "[" << i << "]: got " << got[i] << ", double reference " << expected[i]);
    REQUIRE(got[i] == Approx(expected[i]).epsilon(1e-5));
  }
}

OptimizerSpec spec_with_rate(OptimizerType type, double lr) {
  OptimizerSpec s;
  s.type = type;
  s.lr = lr;
  return s;
}

// One case: a spec, and PyTorch's float outputs for it (parameter after steps 1-3, final state).
struct TorchCase {
  const char* name;
  OptimizerSpec spec;
  std::vector<std::array<float, 3>> params;
  std::vector<std::array<float, 3>> state;
};

// Produced by this script (torch 1.13.0, CPU, torch.set_num_threads(1)), printing "%.9e" of each
// float (9 significant digits round-trip a float exactly):
//
//   import torch
//   P0 = [0.5, -1.25, 2.0]
//   G = [[0.1, -0.2, 0.3], [-0.4, 0.5, 0.25], [0.05, 0.6, -0.7]]
//   def run(make, decay=0.0, lr=None):
//       p = torch.tensor(P0, dtype=torch.float32, requires_grad=True)
//       opt = make([p])
//       for t, g in enumerate(G):
//           if decay:  # Keras 2.x decay, t = steps done
//               for group in opt.param_groups: group['lr'] = lr / (1.0 + decay * t)
//           p.grad = torch.tensor(g, dtype=torch.float32)
//           opt.step()
//           print(p.tolist())
//       print({k: v.tolist() for k, v in opt.state[p].items() if v.numel() == 3})
//   run(lambda ps: torch.optim.SGD(ps, lr=0.1))                                      # sgd
//   run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1))
//   run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01))
//   run(lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.9, 0.999), eps=1e-7))
//   run(lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-7, weight_decay=0.1))
//   run(lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-7))
//   run(lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-7), decay=0.5, lr=0.01)
//   run(lambda ps: torch.optim.Adadelta(ps, lr=1.0, rho=0.95, eps=1e-6))
//   run(lambda ps: torch.optim.Adadelta(ps, lr=0.5, rho=0.9, eps=1e-6, weight_decay=0.05))
std::vector<TorchCase> torch_cases() {
  std::vector<TorchCase> cases;
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::sgd, 0.1);
    cases.push_back({"sgd",
                     s,
                     {{4.900000095e-01f, -1.230000019e+00f, 1.970000029e+00f},
                      {5.300000310e-01f, -1.279999971e+00f, 1.945000052e+00f},
                      {5.250000358e-01f, -1.340000033e+00f, 2.015000105e+00f}},
                     {}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::sgd, 0.1);
    s.momentum = 0.9;
    s.dampening = 0.1;
    cases.push_back({"sgd momentum dampening",
                     s,
                     {{4.900000095e-01f, -1.230000019e+00f, 1.970000029e+00f},
                      {5.170000196e-01f, -1.256999969e+00f, 1.920500040e+00f},
                      {5.368000269e-01f, -1.335299969e+00f, 1.938950062e+00f}},
                     {{-1.979999989e-01f, 7.829999924e-01f, -1.844999790e-01f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::sgd, 0.1);
    s.momentum = 0.9;
    s.nesterov = true;
    s.weight_decay = 0.01;
    cases.push_back({"sgd nesterov weight_decay",
                     s,
                     {{4.800499976e-01f, -1.209625006e+00f, 1.939200044e+00f},
                      {5.466328859e-01f, -1.285114169e+00f, 1.862095594e+00f},
                      {5.604509711e-01f, -1.420701385e+00f, 1.946408868e+00f}},
                     {{-2.151632309e-01f, 8.541373014e-01f, -1.797262430e-01f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::adam, 0.01);
    s.beta1 = 0.9;
    s.beta2 = 0.999;
    s.eps = 1e-7;
    cases.push_back({"adam",
                     s,
                     {{4.900000095e-01f, -1.240000010e+00f, 1.990000010e+00f},
                      {4.955950379e-01f, -1.244422197e+00f, 1.980088234e+00f},
                      {4.991190732e-01f, -1.251460075e+00f, 1.981937528e+00f}},
                     {{-2.290000021e-02f, 8.879999816e-02f, -2.320000157e-02f},
                      {1.723200403e-04f, 6.496700807e-04f, 6.422576262e-04f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::adam, 0.01);
    s.beta1 = 0.8;
    s.beta2 = 0.99;
    s.eps = 1e-7;
    s.weight_decay = 0.1;
    cases.push_back({"adam weight_decay",
                     s,
                     {{4.900000095e-01f, -1.240000010e+00f, 1.990000010e+00f},
                      {4.947464764e-01f, -1.241833091e+00f, 1.980071425e+00f},
                      {4.962826073e-01f, -1.247691989e+00f, 1.978571773e+00f}},
                     {{-1.706507243e-02f, 1.137233451e-01f, 3.544144705e-02f},
                      {1.539164572e-03f, 4.698868375e-03f, 6.966067478e-03f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::rmsprop, 0.01);
    s.rho = 0.9;
    s.eps = 1e-7;
    cases.push_back({"rmsprop",
                     s,
                     {{4.683773220e-01f, -1.218377233e+00f, 1.968377233e+00f},
                      {4.991465211e-01f, -1.247942805e+00f, 1.947507620e+00f},
                      {4.951252341e-01f, -1.272090077e+00f, 1.975639582e+00f}},
                     {{1.546000037e-02f, 6.174000353e-02f, 6.191499904e-02f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::rmsprop, 0.01);
    s.rho = 0.9;
    s.eps = 1e-7;
    s.decay = 0.5;
    cases.push_back({"rmsprop keras decay",
                     s,
                     {{4.683773220e-01f, -1.218377233e+00f, 1.968377233e+00f},
                      {4.888901114e-01f, -1.238087654e+00f, 1.954464197e+00f},
                      {4.868794680e-01f, -1.250161290e+00f, 1.968530178e+00f}},
                     {{1.546000037e-02f, 6.174000353e-02f, 6.191499904e-02f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::adadelta, 1.0);
    s.rho = 0.95;
    s.eps = 1e-6;
    cases.push_back({"adadelta",
                     s,
                     {{4.955323339e-01f, -1.245528936e+00f, 1.995528340e+00f},
                      {5.016736388e-01f, -1.251420498e+00f, 1.991418839e+00f},
                      {5.005909801e-01f, -1.257891536e+00f, 1.998008370e+00f}},
                     {{8.176251315e-03f, 3.168000281e-02f, 3.153000027e-02f},
                      {2.750813792e-06f, 4.644559340e-06f, 3.875578386e-06f}}});
  }
  {
    OptimizerSpec s = spec_with_rate(OptimizerType::adadelta, 0.5);
    s.rho = 0.9;
    s.eps = 1e-6;
    s.weight_decay = 0.05;
    cases.push_back({"adadelta weight_decay",
                     s,
                     {{4.984193742e-01f, -1.248418927e+00f, 1.998418927e+00f},
                      {5.005509853e-01f, -1.250362158e+00f, 1.996903181e+00f},
                      {4.999501705e-01f, -1.252544761e+00f, 1.998960018e+00f}},
                     {{1.449012384e-02f, 5.170287564e-02f, 5.999860168e-02f},
                      {2.589667019e-06f, 4.074875960e-06f, 3.329355195e-06f}}});
  }
  return cases;
}

}  // namespace

TEST_CASE("SGD by hand: plain, and momentum 0.9 with dampening 0.1", "[optim][sgd]") {
  // Plain, lr 0.1: p -= 0.1 g.
  //   0.5   -> 0.49  (-0.01)  -> 0.53  (+0.04)  -> 0.525 (-0.005)
  //   -1.25 -> -1.23 (+0.02)  -> -1.28 (-0.05)  -> -1.34 (-0.06)
  //   2.0   -> 1.97  (-0.03)  -> 1.945 (-0.025) -> 2.015 (+0.07)
  const Trajectory plain = run_three_steps(spec_with_rate(OptimizerType::sgd, 0.1));
  require_close_to(plain.params[0], {0.49, -1.23, 1.97}, "plain step 1");
  require_close_to(plain.params[1], {0.53, -1.28, 1.945}, "plain step 2");
  require_close_to(plain.params[2], {0.525, -1.34, 2.015}, "plain step 3");
  REQUIRE(plain.state.empty());

  // Momentum 0.9, dampening 0.1 (so 1 - dampening = 0.9), lr 0.1:
  //   buf1 = g1 = [0.1, -0.2, 0.3] (no dampening on the first step)  -> p1 = [0.49, -1.23, 1.97]
  //   buf2 = 0.9 buf1 + 0.9 g2 = 0.9 [-0.3, 0.3, 0.55] = [-0.27, 0.27, 0.495]
  //                                                       -> p2 = [0.517, -1.257, 1.9205]
  //   buf3 = 0.9 buf2 + 0.9 g3 = 0.9 [-0.22, 0.87, -0.205] = [-0.198, 0.783, -0.1845]
  //                                                       -> p3 = [0.5368, -1.3353, 1.93895]
  OptimizerSpec s = spec_with_rate(OptimizerType::sgd, 0.1);
  s.momentum = 0.9;
  s.dampening = 0.1;
  const Trajectory momentum = run_three_steps(s);
  require_close_to(momentum.params[0], {0.49, -1.23, 1.97}, "momentum step 1");
  require_close_to(momentum.params[1], {0.517, -1.257, 1.9205}, "momentum step 2");
  require_close_to(momentum.params[2], {0.5368, -1.3353, 1.93895}, "momentum step 3");
  require_close_to(momentum.state.at(0), {-0.198, 0.783, -0.1845}, "momentum buffer");
}

TEST_CASE("Nesterov SGD with weight decay, first step by hand", "[optim][sgd]") {
  // lr 0.1, momentum 0.9, weight decay 0.01. Step 1: g = g1 + 0.01 p0 =
  // [0.105, -0.2125, 0.32]; buf = g; direction = g + 0.9 buf = 1.9 g = [0.1995, -0.40375, 0.608];
  // p1 = p0 - 0.1 direction = [0.48005, -1.209625, 1.9392].
  OptimizerSpec s = spec_with_rate(OptimizerType::sgd, 0.1);
  s.momentum = 0.9;
  s.nesterov = true;
  s.weight_decay = 0.01;
  const Trajectory t = run_three_steps(s);
  require_close_to(t.params[0], {0.48005, -1.209625, 1.9392}, "step 1");
}

TEST_CASE("Adam first step moves every element by lr (bias-corrected)", "[optim][adam]") {
  // Step 1: m = 0.1 g, v = 0.001 g^2, mhat = g, vhat = g^2, so p -= lr g / (|g| + eps)
  // = lr sign(g) (1 - eps/|g|): with lr 0.01, eps 1e-7 -> p1 = p0 - 0.01 sign(g1) to ~1e-8.
  OptimizerSpec s = spec_with_rate(OptimizerType::adam, 0.01);
  s.eps = 1e-7;
  const Trajectory t = run_three_steps(s);
  require_close_to(t.params[0], {0.49, -1.24, 1.99}, "step 1");
}

TEST_CASE("RMSprop and Adadelta first step by hand", "[optim][rmsprop][adadelta]") {
  // RMSprop, rho 0.9, lr 0.01, eps 1e-7: a = 0.1 g^2, p -= 0.01 g / (sqrt(0.1) |g| + eps)
  // = 0.01 sign(g) / sqrt(0.1) = 0.0316228 sign(g) -> [0.4683772, -1.2183772, 1.9683772].
  OptimizerSpec r = spec_with_rate(OptimizerType::rmsprop, 0.01);
  r.rho = 0.9;
  r.eps = 1e-7;
  require_close_to(run_three_steps(r).params[0], {0.4683772, -1.2183772, 1.9683772}, "rmsprop");

  // Adadelta, rho 0.95, lr 1, eps 1e-6: a = 0.05 g^2, u = g sqrt(1e-6) / sqrt(0.05 g^2 + 1e-6).
  // g = 0.1: u = 1e-4 / sqrt(5.01e-4) = 0.00446767 -> 0.5 - 0.00446767 = 0.49553233.
  OptimizerSpec a = spec_with_rate(OptimizerType::adadelta, 1.0);
  a.rho = 0.95;
  a.eps = 1e-6;
  REQUIRE(run_three_steps(a).params[0][0] == Approx(0.49553233).epsilon(1e-6));
}

TEST_CASE("every optimizer matches the double reference and PyTorch", "[optim][torch]") {
  for (const TorchCase& c : torch_cases()) {
    DYNAMIC_SECTION(c.name) {
      const Trajectory got = run_three_steps(c.spec);
      const Trajectory expected = reference(c.spec);
      REQUIRE(got.params.size() == 3);
      REQUIRE(got.state.size() == expected.state.size());
      REQUIRE(got.state.size() == c.state.size());
      for (int step = 0; step < 3; ++step) {
        require_close_to(got.params[step], expected.params[step], "parameter");
      }
      for (std::size_t k = 0; k < got.state.size(); ++k) {
        require_close_to(got.state[k], expected.state[k], "state");
      }
      // PyTorch runs the same fp32 formulas; its CPU kernels may fuse a multiply-add (FMA, one
      // rounding instead of two) where this build never does (-ffp-contract=off): e.g. plain
      // SGD step 3, element 1: fl(-1.28 - fl(0.1 * 0.6)) = -1.3399999 here, fused -1.34 in torch.
      // Observed at most 2 units in the last place; allow 4. A formula difference is far more.
      for (int step = 0; step < 3; ++step) {
        for (int i = 0; i < 3; ++i) {
          const float ours = static_cast<float>(got.params[step][i]);
          INFO("step " << step + 1 << " element " << i << ": ours " << ours << ", torch "
                       << c.params[step][i]);
          CHECK(ulp_distance(ours, c.params[step][i]) <= 4);
        }
      }
      for (std::size_t k = 0; k < got.state.size(); ++k) {
        for (int i = 0; i < 3; ++i) {
          const float ours = static_cast<float>(got.state[k][i]);
          INFO("state " << k << " element " << i << ": ours " << ours << ", torch "
                        << c.state[k][i]);
          CHECK(ulp_distance(ours, c.state[k][i]) <= 4);
        }
      }
    }
  }
}
