#include "backend/ops.h"

namespace ra::backend {

std::vector<Digest128> Ops::digest(const std::vector<const Tensor*>& tensors) {
  std::vector<Digest128> out;
  out.reserve(tensors.size());
  for (const Tensor* t : tensors)
    out.push_back(t->on_host() ? ra::digest(*t) : ra::digest(t->to_host()));
  return out;
}

}  // namespace ra::backend
