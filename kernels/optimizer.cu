// optimizer_update: value[i], s0[i], s1[i] = apply_update(rule, value[i], grad[i], ...) for i in
// [0, count); one writer per element, grid-stride. Bit-identical to the host optimizer because
// both run apply_update with FMA contraction off (nvcc --fmad=false, g++ -ffp-contract=off) and
// IEEE sqrtf / division (nvcc's defaults -prec-sqrt=true -prec-div=true).
#include "kernels/launch_config.cuh"
#include "kernels/optimizer.cuh"

namespace ra::kernels {
namespace {

__device__ const ra::optim::UpdateRule& rule_of(const ra::optim::UpdateRule& rule) {
  return rule;
}
__device__ ra::optim::UpdateRule rule_of(DeviceValue<ra::optim::UpdateRule> rule) {
  return *rule.at;
}

// The rule as launched (a value) or as read from device memory when the kernel runs.
template <class Rule>
__global__ void optimizer_update_kernel(Rule rule_arg, std::int64_t count, float* value,
                                        const float* grad, float* s0, float* s1) {
  const ra::optim::UpdateRule rule = rule_of(rule_arg);
  for (std::int64_t i = detail::grid_first(); i < count; i += detail::grid_stride()) {
    float v = value[i];
    ra::optim::apply_update(rule, v, grad[i], s0 ? s0 + i : nullptr, s1 ? s1 + i : nullptr);
    value[i] = v;
  }
}

}  // namespace

void optimizer_update(cudaStream_t stream, const ra::optim::UpdateRule& rule, std::int64_t count,
                      float* value, const float* grad, float* s0, float* s1) {
  if (count <= 0) return;
  optimizer_update_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(
      rule, count, value, grad, s0, s1);
}

void optimizer_update(cudaStream_t stream, DeviceValue<ra::optim::UpdateRule> rule,
                      std::int64_t count, float* value, const float* grad, float* s0, float* s1) {
  if (count <= 0) return;
  optimizer_update_kernel<<<detail::grid_for(count), detail::kThreads, 0, stream>>>(
      rule, count, value, grad, s0, s1);
}

}  // namespace ra::kernels
