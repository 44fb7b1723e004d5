#include "optim/elementwise_optimizer.h"

#include <stdexcept>

#include "core/digest.h"

namespace ra::optim {

ElementwiseOptimizer::ElementwiseOptimizer(double lr, double decay, double weight_decay,
                                           std::vector<std::string> state_kinds)
    : Optimizer(lr, decay),
      weight_decay_(static_cast<float>(weight_decay)),
      state_kinds_(std::move(state_kinds)) {}

void ElementwiseOptimizer::check_layout(const std::vector<Parameter>& params) const {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    if (p.value == nullptr || p.grad == nullptr) {
      throw std::logic_error("optimizer: parameter '" + p.name + "' has no value or gradient");
    }
    if (p.grad->shape() != p.value->shape()) {
      throw std::logic_error("optimizer: gradient of '" + p.name + "' has shape " +
                             to_string(p.grad->shape()) + ", the parameter " +
                             to_string(p.value->shape()));
    }
  }
  if (!has_layout_) return;
  if (params.size() != names_.size()) {
    throw std::logic_error("optimizer: step with " + std::to_string(params.size()) +
                           " parameters, the first step had " + std::to_string(names_.size()));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].name != names_[i] || params[i].value->shape() != shapes_[i]) {
      throw std::logic_error("optimizer: parameter " + std::to_string(i) + " is '" +
                             params[i].name + "' " + to_string(params[i].value->shape()) +
                             ", the first step had '" + names_[i] + "' " + to_string(shapes_[i]));
    }
  }
}

void ElementwiseOptimizer::record_layout_and_create_state(const std::vector<Parameter>& params) {
  for (const Parameter& p : params) {
    names_.push_back(p.name);
    shapes_.push_back(p.value->shape());
    std::vector<Tensor> kinds;
    for (std::size_t k = 0; k < state_kinds_.size(); ++k) {
      kinds.emplace_back(p.value->shape(), p.value->memory());  // zeros, beside the parameter
    }
    state_.push_back(std::move(kinds));
  }
  has_layout_ = true;
}

void ElementwiseOptimizer::size_digests(UpdateDigests& digests) const {
  digests.params.resize(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::size_t chunks =
        digest_chunk_count(static_cast<std::size_t>(element_count(shapes_[i])) * sizeof(float));
    UpdateDigests::Param& d = digests.params[i];
    d.value.resize(chunks);
    d.grad.resize(chunks);
    for (std::size_t k = 0; k < 2; ++k) d.state[k].resize(k < state_kinds_.size() ? chunks : 0);
  }
}

void ElementwiseOptimizer::step(const std::vector<Parameter>& params, UpdateDigests* digests) {
  check_layout(params);  // before anything changes: a rejected step leaves no trace
  if (!has_layout_) record_layout_and_create_state(params);
  if (digests != nullptr) {
    size_digests(*digests);
    // Digests come only from a backend's fused update; the host loop below takes none.
    digests->complete = static_cast<bool>(device_update_);
  }

  UpdateRule rule = begin_step(learning_rate(), iterations_ + 1);
  rule.weight_decay = weight_decay_;
  for (std::size_t i = 0; i < params.size(); ++i) {
    float* value = params[i].value->data();
    const float* grad = params[i].grad->data();
    float* s0 = state_kinds_.size() > 0 ? state_[i][0].data() : nullptr;
    float* s1 = state_kinds_.size() > 1 ? state_[i][1].data() : nullptr;
    const auto n = static_cast<std::int64_t>(params[i].value->size());
    if (device_update_) {  // the backend's update (the trainer sets one for every backend)
      if (digests == nullptr) {
        device_update_(rule, n, value, grad, s0, s1, nullptr);
        continue;
      }
      UpdateDigests::Param& d = digests->params[i];
      const ChunkDigestTargets targets{
          d.value.data(), d.grad.data(), s0 ? d.state[0].data() : nullptr,
          s1 ? d.state[1].data() : nullptr, &digests->hash_nanoseconds};
      if (!device_update_(rule, n, value, grad, s0, s1, &targets)) digests->complete = false;
      continue;
    }
    if (!params[i].value->on_host()) {
      throw std::logic_error("optimizer: parameter '" + params[i].name +
                             "' is in device memory and no device update is set");
    }
    for (std::int64_t j = 0; j < n; ++j) {
      apply_update(rule, value[j], grad[j], s0 ? s0 + j : nullptr, s1 ? s1 + j : nullptr);
    }
  }
  ++iterations_;
}

std::vector<std::pair<std::string, const Tensor*>> ElementwiseOptimizer::state() const {
  std::vector<std::pair<std::string, const Tensor*>> named;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    for (std::size_t k = 0; k < state_kinds_.size(); ++k) {
      named.emplace_back(names_[i] + "." + state_kinds_[k], &state_[i][k]);
    }
  }
  return named;
}

void ElementwiseOptimizer::restore(const std::vector<Parameter>& params, std::int64_t iterations,
                                   const std::vector<std::pair<std::string, Tensor>>& state) {
  check_layout(params);
  if (!has_layout_) record_layout_and_create_state(params);
  for (std::size_t i = 0; i < state_.size(); ++i) {
    for (std::size_t k = 0; k < state_kinds_.size(); ++k) {
      const std::string name = names_[i] + "." + state_kinds_[k];
      for (const auto& [saved_name, tensor] : state) {
        if (saved_name != name) continue;
        if (tensor.shape() != state_[i][k].shape()) {
          throw std::logic_error("optimizer: restored state '" + name + "' has shape " +
                                 to_string(tensor.shape()) + ", the parameter " +
                                 to_string(state_[i][k].shape()));
        }
        state_[i][k].copy_from(tensor);
      }
    }
  }
  iterations_ = iterations;
}

}  // namespace ra::optim
