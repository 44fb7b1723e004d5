// The Optimizer contract: Keras learning-rate decay and the step count, state() names and order,
// the fixed parameter list, and hyperparameter validation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "optim/optimizer.h"

namespace {

using ra::Tensor;
using ra::optim::Parameter;
using ra::spec::OptimizerSpec;
using ra::spec::OptimizerType;

OptimizerSpec make_spec(OptimizerType type) {
  OptimizerSpec s;
  s.type = type;
  s.lr = 0.01;
  return s;
}

// A conv weight and its bias, with constant gradients.
struct TwoParameters {
  Tensor weight{{2, 1, 3, 3}, 0.5f}, weight_grad{{2, 1, 3, 3}, 0.25f};
  Tensor bias{{2}, -1.0f}, bias_grad{{2}, 0.125f};
  std::vector<Parameter> list() {
    return {{"conv2d_0.weight", &weight, &weight_grad}, {"conv2d_0.bias", &bias, &bias_grad}};
  }
};

std::vector<std::string> state_names(const ra::optim::Optimizer& optimizer) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : optimizer.state()) names.push_back(name);
  return names;
}

std::vector<std::string> problem_paths(const ra::ValidationError& e) {
  std::vector<std::string> paths;
  for (const ra::Problem& p : e.problems()) paths.push_back(p.path);
  return paths;
}

}  // namespace

TEST_CASE("learning_rate follows Keras time decay over iterations", "[optim][decay]") {
  // lr 0.01, decay 0.5: lr_t = 0.01 / (1 + 0.5 t), t = steps done: 0.01, 0.01/1.5, 0.005, 0.004.
  OptimizerSpec s = make_spec(OptimizerType::rmsprop);
  s.decay = 0.5;
  auto optimizer = ra::optim::make_optimizer(s);
  TwoParameters p;
  const std::vector<Parameter> params = p.list();
  const double expected[] = {0.01, 0.01 / 1.5, 0.005, 0.004};
  for (int t = 0; t < 4; ++t) {
    REQUIRE(optimizer->iterations() == t);
    REQUIRE(optimizer->learning_rate() == Approx(expected[t]).epsilon(1e-15));
    if (t < 3) optimizer->step(params);
  }

  // Without decay the rate never changes.
  auto constant = ra::optim::make_optimizer(make_spec(OptimizerType::sgd));
  constant->step(params);
  constant->step(params);
  REQUIRE(constant->learning_rate() == 0.01);
  REQUIRE(constant->iterations() == 2);
}

TEST_CASE("state() names are <param>.<kind> in parameter order, then kind", "[optim][state]") {
  struct Expectation {
    OptimizerSpec spec;
    std::vector<std::string> kinds;
  };
  OptimizerSpec sgd_momentum = make_spec(OptimizerType::sgd);
  sgd_momentum.momentum = 0.9;
  const std::vector<Expectation> expectations = {
      {make_spec(OptimizerType::sgd), {}},
      {sgd_momentum, {"momentum"}},
      {make_spec(OptimizerType::adam), {"exp_avg", "exp_avg_sq"}},
      {make_spec(OptimizerType::rmsprop), {"square_avg"}},
      {make_spec(OptimizerType::adadelta), {"square_avg", "acc_delta"}},
  };
  for (const Expectation& e : expectations) {
    INFO(ra::spec::to_string(e.spec.type) << " with momentum " << e.spec.momentum);
    auto optimizer = ra::optim::make_optimizer(e.spec);
    REQUIRE(optimizer->state().empty());  // created by the first step
    TwoParameters p;
    optimizer->step(p.list());

    std::vector<std::string> expected;
    for (const char* param : {"conv2d_0.weight", "conv2d_0.bias"}) {
      for (const std::string& kind : e.kinds) expected.push_back(std::string(param) + "." + kind);
    }
    REQUIRE(state_names(*optimizer) == expected);
    // Each state tensor has its parameter's shape, and the same tensor is listed at every call.
    const auto first = optimizer->state();
    for (const auto& [name, tensor] : first) {
      const bool is_weight = name.rfind("conv2d_0.weight.", 0) == 0;
      REQUIRE(tensor->shape() == (is_weight ? p.weight.shape() : p.bias.shape()));
    }
    optimizer->step(p.list());
    const auto second = optimizer->state();
    REQUIRE(second.size() == first.size());
    for (std::size_t i = 0; i < first.size(); ++i) REQUIRE(second[i].second == first[i].second);
  }
}

TEST_CASE("state tensors hold the optimizer's buffers", "[optim][state]") {
  // SGD momentum: after one step the buffer is the gradient itself (torch clones g).
  OptimizerSpec s = make_spec(OptimizerType::sgd);
  s.momentum = 0.9;
  auto optimizer = ra::optim::make_optimizer(s);
  TwoParameters p;
  optimizer->step(p.list());
  const auto state = optimizer->state();
  REQUIRE(ra::bitwise_equal(*state[0].second, p.weight_grad));
  REQUIRE(ra::bitwise_equal(*state[1].second, p.bias_grad));
  // And the parameters moved by lr * g: 0.5 - 0.01 * 0.25, -1 - 0.01 * 0.125.
  for (float w : p.weight) REQUIRE(w == 0.5f - 0.01f * 0.25f);
  for (float b : p.bias) REQUIRE(b == -1.0f - 0.01f * 0.125f);
}

TEST_CASE("a step with another parameter list throws and changes nothing", "[optim][layout]") {
  for (OptimizerType type :
       {OptimizerType::sgd, OptimizerType::adam, OptimizerType::rmsprop, OptimizerType::adadelta}) {
    INFO(ra::spec::to_string(type));
    auto optimizer = ra::optim::make_optimizer(make_spec(type));
    TwoParameters p;
    optimizer->step(p.list());
    const Tensor weight_before = p.weight;
    std::vector<Tensor> state_before;
    for (const auto& [name, tensor] : optimizer->state()) state_before.push_back(*tensor);

    std::vector<Parameter> renamed = p.list();
    renamed[1].name = "conv2d_1.bias";
    CHECK_THROWS_AS(optimizer->step(renamed), std::logic_error);

    std::vector<Parameter> swapped = p.list();
    std::swap(swapped[0], swapped[1]);
    CHECK_THROWS_AS(optimizer->step(swapped), std::logic_error);

    std::vector<Parameter> fewer = p.list();
    fewer.pop_back();
    CHECK_THROWS_AS(optimizer->step(fewer), std::logic_error);

    Tensor wider({3}), wider_grad({3});
    std::vector<Parameter> reshaped = p.list();
    reshaped[1] = {"conv2d_0.bias", &wider, &wider_grad};
    CHECK_THROWS_AS(optimizer->step(reshaped), std::logic_error);

    Tensor wrong_grad({2, 9});
    std::vector<Parameter> bad_grad = p.list();
    bad_grad[0].grad = &wrong_grad;  // same element count, other shape
    CHECK_THROWS_AS(optimizer->step(bad_grad), std::logic_error);

    std::vector<Parameter> no_grad = p.list();
    no_grad[1].grad = nullptr;
    CHECK_THROWS_AS(optimizer->step(no_grad), std::logic_error);

    REQUIRE(optimizer->iterations() == 1);
    REQUIRE(ra::bitwise_equal(p.weight, weight_before));
    const auto state_after = optimizer->state();
    REQUIRE(state_after.size() == state_before.size());
    for (std::size_t i = 0; i < state_before.size(); ++i) {
      REQUIRE(ra::bitwise_equal(*state_after[i].second, state_before[i]));
    }
    optimizer->step(p.list());  // the original list still works
    REQUIRE(optimizer->iterations() == 2);
  }
}

TEST_CASE("a bad gradient shape on the first step is rejected too", "[optim][layout]") {
  auto optimizer = ra::optim::make_optimizer(make_spec(OptimizerType::adam));
  Tensor w({4}), g({5});
  CHECK_THROWS_AS(optimizer->step({{"dense_0.weight", &w, &g}}), std::logic_error);
  REQUIRE(optimizer->iterations() == 0);
  REQUIRE(optimizer->state().empty());
}

TEST_CASE("parameters update independently of each other", "[optim][layout]") {
  // Elementwise: a parameter gets the same bits whether stepped alone or beside another one.
  OptimizerSpec s = make_spec(OptimizerType::adam);
  s.weight_decay = 0.01;
  TwoParameters together, alone;
  auto both = ra::optim::make_optimizer(s);
  auto single = ra::optim::make_optimizer(s);
  for (int t = 0; t < 3; ++t) {
    both->step(together.list());
    single->step({alone.list()[1]});
  }
  REQUIRE(ra::bitwise_equal(together.bias, alone.bias));
}

TEST_CASE("make_optimizer rejects hyperparameters out of range", "[optim][validation]") {
  OptimizerSpec s = make_spec(OptimizerType::adam);
  s.lr = -0.1;
  s.beta1 = 1.0;
  s.beta2 = -0.5;
  s.eps = -1e-8;
  try {
    ra::optim::make_optimizer(s);
    FAIL("expected a ValidationError");
  } catch (const ra::ValidationError& e) {
    REQUIRE(problem_paths(e) == std::vector<std::string>{"optimizer.lr", "optimizer.beta1",
                                                         "optimizer.beta2", "optimizer.eps"});
  }

  OptimizerSpec nesterov = make_spec(OptimizerType::sgd);
  nesterov.nesterov = true;  // momentum 0: torch.optim.SGD refuses this too
  try {
    ra::optim::make_optimizer(nesterov);
    FAIL("expected a ValidationError");
  } catch (const ra::ValidationError& e) {
    REQUIRE(problem_paths(e) == std::vector<std::string>{"optimizer.nesterov"});
  }

  OptimizerSpec rms = make_spec(OptimizerType::rmsprop);
  rms.rho = 1.5;
  rms.decay = -1.0;
  try {
    ra::optim::make_optimizer(rms);
    FAIL("expected a ValidationError");
  } catch (const ra::ValidationError& e) {
    REQUIRE(problem_paths(e) == std::vector<std::string>{"optimizer.decay", "optimizer.rho"});
  }

  // The defaults of every type are accepted.
  for (OptimizerType type :
       {OptimizerType::sgd, OptimizerType::adam, OptimizerType::rmsprop, OptimizerType::adadelta}) {
    OptimizerSpec d;
    d.type = type;
    REQUIRE(ra::optim::make_optimizer(d) != nullptr);
  }
}
