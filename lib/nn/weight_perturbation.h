#pragma once
// The instability floor's perturbation (Summers & Dinneen, ICML 2021): one bit of one initial
// weight flipped, the lowest mantissa bit, so that the runs of an audit's perturbed group differ
// from the same-seed runs by one ULP of one weight and by nothing else (docs/statistics.md).
#include <cstdint>
#include <string>
#include <string_view>

#include "nn/model.h"

namespace ra::nn {

// The random stream that picks the weight: keyed by the run's init seed, counted by the draw (an
// audit's run index), so each run of the group flips another weight and no other stream moves.
inline constexpr std::string_view kPerturbStream = "perturb/weight";

struct WeightPerturbation {
  std::string tensor;        // the parameter's name ("dense_0.weight")
  std::int64_t element = 0;  // flat index within it (C order)
  int bit = 0;               // the bit flipped: 0, the lowest mantissa bit (1 ULP)
  std::uint32_t before = 0;  // the weight's bits as initialised
  std::uint32_t after = 0;   // and after the flip (before ^ 1 << bit)
};

// Which weight draw `draw` of the stream picks: uniform over every element of every parameter
// (in parameter order), bit 0. Pure: the model's values are not read or changed.
WeightPerturbation choose_weight(const Model& model, std::uint64_t init_seed, std::uint64_t draw);

// Flips the chosen bit in the model's parameter (on its device: one copy to the host and back)
// and returns the choice with the weight's bits before and after.
WeightPerturbation perturb_one_weight(Model& model, std::uint64_t init_seed, std::uint64_t draw);

}  // namespace ra::nn
