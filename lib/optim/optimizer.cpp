#include "optim/optimizer.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/rmsprop.h"
#include "optim/sgd.h"

namespace ra::optim {

double Optimizer::learning_rate() const noexcept {
  // Keras 2.x: lr * (1 / (1 + decay * iterations)), iterations counted before this step.
  return lr_ / (1.0 + decay_ * static_cast<double>(iterations_));
}

void Optimizer::rewind(std::int64_t iterations) {
  if (iterations < 0 || iterations > iterations_) {
    throw std::logic_error("optimizer: rewind to " + std::to_string(iterations) + " of " +
                           std::to_string(iterations_) + " completed steps");
  }
  iterations_ = iterations;
}

namespace {

// Range checks that hold for every framework these optimizers mirror; spec validation may check
// them first, this keeps a hand-built OptimizerSpec from producing NaN weights silently.
std::vector<Problem> check_hyperparameters(const spec::OptimizerSpec& s) {
  std::vector<Problem> problems;
  auto require = [&](bool ok, const char* field, const char* expected, double value) {
    if (!ok) {
      problems.push_back({std::string("optimizer.") + field,
                          std::string("expected ") + expected + ", got " + std::to_string(value)});
    }
  };
  auto finite_at_least_zero = [](double x) { return std::isfinite(x) && x >= 0.0; };
  auto in_unit_interval = [](double x) { return x >= 0.0 && x < 1.0; };  // false for NaN
  require(finite_at_least_zero(s.lr), "lr", "a finite number >= 0", s.lr);
  require(finite_at_least_zero(s.decay), "decay", "a finite number >= 0", s.decay);
  require(finite_at_least_zero(s.weight_decay), "weight_decay", "a finite number >= 0",
          s.weight_decay);
  switch (s.type) {
    case spec::OptimizerType::sgd:
      require(finite_at_least_zero(s.momentum), "momentum", "a finite number >= 0", s.momentum);
      require(s.dampening >= 0.0 && s.dampening <= 1.0, "dampening", "a number in [0, 1]",
              s.dampening);
      if (s.nesterov && (s.momentum <= 0.0 || s.dampening != 0.0)) {
        problems.push_back({"optimizer.nesterov",
                            "nesterov needs momentum > 0 and dampening 0 (as torch.optim.SGD)"});
      }
      break;
    case spec::OptimizerType::adam:
      require(in_unit_interval(s.beta1), "beta1", "a number in [0, 1)", s.beta1);
      require(in_unit_interval(s.beta2), "beta2", "a number in [0, 1)", s.beta2);
      require(finite_at_least_zero(s.eps), "eps", "a finite number >= 0", s.eps);
      break;
    case spec::OptimizerType::rmsprop:
    case spec::OptimizerType::adadelta:
      require(in_unit_interval(s.rho), "rho", "a number in [0, 1)", s.rho);
      require(finite_at_least_zero(s.eps), "eps", "a finite number >= 0", s.eps);
      break;
  }
  return problems;
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const spec::OptimizerSpec& spec) {
  if (auto problems = check_hyperparameters(spec); !problems.empty()) {
    throw ValidationError(std::move(problems));
  }
  switch (spec.type) {
    case spec::OptimizerType::sgd:
      return std::make_unique<Sgd>(spec);
    case spec::OptimizerType::adam:
      return std::make_unique<Adam>(spec);
    case spec::OptimizerType::rmsprop:
      return std::make_unique<RmsProp>(spec);
    case spec::OptimizerType::adadelta:
      return std::make_unique<Adadelta>(spec);
  }
  throw std::logic_error("make_optimizer: unknown optimizer type");
}

}  // namespace ra::optim
