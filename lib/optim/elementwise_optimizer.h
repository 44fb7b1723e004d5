#pragma once
// What the four optimizers share: the check that every step sees the same parameter list, the
// state tensors (created as zeros on the first step, named "<param>.<kind>"), the learning-rate
// schedule and PyTorch's weight decay. A subclass supplies its state kinds, its per-step scalars
// and its per-element update.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "optim/optimizer.h"
#include "optim/rules/update_rules.h"

namespace ra::optim {

class ElementwiseOptimizer : public Optimizer {
 public:
  void step(const std::vector<Parameter>& params, UpdateDigests* digests = nullptr) final;
  std::vector<std::pair<std::string, const Tensor*>> state() const final;
  void restore(const std::vector<Parameter>& params, std::int64_t iterations,
               const std::vector<std::pair<std::string, Tensor>>& state) final;

 protected:
  // `state_kinds` name the per-parameter state tensors in the order state() lists them.
  ElementwiseOptimizer(double lr, double decay, double weight_decay,
                       std::vector<std::string> state_kinds);

  // Called once per step, before any update. `lr` is this step's decayed learning rate;
  // `step_number` = iterations() + 1 (1 on the first step). Returns the step's update rule
  // (optim/rules/update_rules.h): per-step scalars (bias corrections, lr) computed here in double,
  // once, then rounded to float for the fp32 updates. The base class fills in weight_decay.
  virtual UpdateRule begin_step(double lr, std::int64_t step_number) = 0;

 private:
  // Throws std::logic_error naming the first difference from the recorded layout.
  void check_layout(const std::vector<Parameter>& params) const;
  void record_layout_and_create_state(const std::vector<Parameter>& params);
  // Sizes `digests` for the recorded layout (no allocation once sized).
  void size_digests(UpdateDigests& digests) const;

  float weight_decay_;
  std::vector<std::string> state_kinds_;
  bool has_layout_ = false;
  std::vector<std::string> names_;
  std::vector<Shape> shapes_;
  std::vector<std::vector<Tensor>> state_;  // [parameter][state kind]
};

}  // namespace ra::optim
