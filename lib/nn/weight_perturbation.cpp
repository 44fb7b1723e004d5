// One bit of one initial weight flipped (nn/weight_perturbation.h).
#include "nn/weight_perturbation.h"

#include <bit>
#include <stdexcept>

#include "rng/stream.h"

namespace ra::nn {

WeightPerturbation choose_weight(const Model& model, std::uint64_t init_seed, std::uint64_t draw) {
  std::uint64_t total = 0;
  for (const Param* p : model.params()) total += static_cast<std::uint64_t>(p->value.size());
  if (total == 0) throw std::logic_error("choose_weight: the model has no parameters");
  // One Philox block per draw: counter (draw, 0); 64 of its bits pick the element.
  const rng::PhiloxBlock block =
      rng::philox_block(rng::derive_key(init_seed, kPerturbStream), draw, 0);
  const std::uint64_t random64 = (static_cast<std::uint64_t>(block.v[1]) << 32) | block.v[0];
  std::uint64_t index = rng::uniform_below(random64, total);
  for (const Param* p : model.params()) {
    const auto size = static_cast<std::uint64_t>(p->value.size());
    if (index < size) return WeightPerturbation{p->name, static_cast<std::int64_t>(index), 0};
    index -= size;
  }
  throw std::logic_error("choose_weight: index beyond the parameters");  // unreachable
}

WeightPerturbation perturb_one_weight(Model& model, std::uint64_t init_seed, std::uint64_t draw) {
  WeightPerturbation w = choose_weight(model, init_seed, draw);
  for (Param* p : model.params()) {
    if (p->name != w.tensor) continue;
    Tensor host = p->value.to_host();
    float& v = host[w.element];
    w.before = std::bit_cast<std::uint32_t>(v);
    w.after = w.before ^ (1u << w.bit);
    v = std::bit_cast<float>(w.after);
    p->value.copy_from(host);
    break;
  }
  return w;
}

}  // namespace ra::nn
