#include "backend/ops.h"

#include <stdexcept>

namespace ra::backend {

std::vector<Digest128> Ops::digest(const std::vector<const Tensor*>& tensors) {
  std::vector<Digest128> out;
  out.reserve(tensors.size());
  for (const Tensor* t : tensors)
    out.push_back(t->on_host() ? ra::digest(*t) : ra::digest(t->to_host()));
  return out;
}

std::vector<Digest128> Ops::digest_regions(const std::vector<MemoryRegion>& regions) {
  std::vector<Digest128> out;
  out.reserve(regions.size());
  const bool host = memory().host_accessible();
  std::vector<unsigned char> copy;  // a device region's bytes, downloaded
  for (const MemoryRegion& r : regions) {
    const std::size_t bytes = static_cast<std::size_t>(r.count) * dtype_bytes(r.dtype);
    const void* data = r.data;
    if (!host && bytes > 0) {
      copy.resize(bytes);
      memory().download(copy.data(), r.data, bytes);
      data = copy.data();
    }
    out.push_back(digest_bytes(r.dtype, Shape{r.count}, data, bytes));
  }
  return out;
}

void Ops::digest_when_done(const std::vector<const Tensor*>& tensors,
                           std::shared_ptr<std::vector<Digest128>> out) {
  *out = digest(tensors);
}

std::size_t Ops::queue_digests(const std::vector<MemoryRegion>&) {
  throw std::logic_error("this backend does not queue digests (Ops::queues_digests)");
}

std::vector<Digest128> Ops::take_queued_digests() {
  throw std::logic_error("this backend does not queue digests (Ops::queues_digests)");
}

StepLaunchDecision Ops::begin_step(const StepRequest& request) {
  return {StepLaunch::eager, request.graphs
                                 ? "the " + name() + " backend runs each op as it is called"
                                 : "CUDA graphs off"};
}

void Ops::loss_when_done(LossKind kind, int n, int classes, const float* pred,
                         const std::int32_t* labels, float* grad, KernelMode mode, float* value) {
  *value = kind == LossKind::mean_squared_error
               ? mean_squared_error(n, classes, pred, labels, grad, mode)
               : softmax_cross_entropy(n, classes, pred, labels, grad, mode);
}

}  // namespace ra::backend
