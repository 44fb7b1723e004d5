// Every case of the op table on the CUDA backend, in its four modes: one [gpu] test, one section
// per op (run one with -c conv2d_forward). It skips, saying why, where no GPU is usable (every
// machine of this project's CI) or the CUDA backend is not built.
//
// Modes: ops with a KernelMode run in deterministic, nondeterministic, autotune and
// batch_invariant (the call's mode, and the mode the backend was made with, which pins or
// autotunes forward convolutions); ops without one run once, convolutions also under autotune,
// and every op under batch_invariant, whose backend runs its own dense forward product.
// Deterministic results must repeat bit for bit; convolutions whose algorithm the backend chooses
// (autotune by timing, deterministic by cuDNN's heuristic ranking) get the wider bound of
// OpCase::autotuned_convolution.
#include <catch2/catch.hpp>

#include "ops/harness.h"

#ifdef RA_HAVE_CUDA
#include "backend/cuda/cuda_ops.h"
#include "backend_cuda/gpu_test_support.h"
#endif

namespace ops_test {
namespace {

#ifdef RA_HAVE_CUDA
void run_cases_on_cuda(const std::string& op) {
  const KernelMode modes[] = {KernelMode::deterministic, KernelMode::nondeterministic,
                              KernelMode::autotune, KernelMode::batch_invariant};
  std::vector<std::unique_ptr<ra::backend::cuda::CudaOps>> backends;
  for (const KernelMode mode : modes) backends.push_back(ra::backend::cuda::make_cuda_ops(mode));
  for (const OpCase* c : cases_of(op)) {
    INFO(op << " [" << c->shape << "]");
    const Arrays arrays = c->arrays();
    const Expected expected = c->reference(arrays);
    for (std::size_t m = 0; m < std::size(modes); ++m) {
      const KernelMode mode = modes[m];
      const bool autotuned = mode == KernelMode::autotune && c->autotuned_convolution;
      const bool invariant = mode == KernelMode::batch_invariant;
      if (!c->takes_mode && mode != KernelMode::deterministic && !autotuned && !invariant) {
        continue;
      }
      // Deterministic mode runs cuDNN's heuristic choice (backend/cuda/conv_heuristic.h: FFT or
      // Winograd, as the ranking says), autotune the fastest by timing: both get the wider,
      // normwise bound, as batch_invariant does (its filter gradient is the heuristic's).
      // Nondeterministic mode pins direct algorithms.
      const bool chosen = c->autotuned_convolution && mode != KernelMode::nondeterministic;
      INFO(ra::backend::to_string(mode));
      const Arrays out = run_case(*backends[m], *c, arrays, mode);
      require_matches_reference(out, expected, chosen);
      if (mode == KernelMode::deterministic || invariant) {
        require_same_bits(out, run_case(*backends[m], *c, arrays, mode), expected);
      }
    }
  }
}
#endif

}  // namespace
}  // namespace ops_test

TEST_CASE("every op on CUDA", "[ops][gpu]") {
#ifdef RA_HAVE_CUDA
  RA_SKIP_WITHOUT_USABLE_GPU();
  for (const std::string& op : ops_test::op_names()) {
    DYNAMIC_SECTION(op) {
      ops_test::run_cases_on_cuda(op);
    }
  }
#else
  WARN("skipped: the CUDA backend is not built (REPRO_AUDIT_CUDA=OFF or no CUDA toolkit)");
#endif
}
