// TimingOps: forwards every call unchanged (bitwise-identical results, directly and through a
// whole training run) and counts calls and time per op and kernel mode.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "nn/model_digest.h"
#include "spec/parse.h"
#include "train/op_timer.h"
#include "train/trainer.h"

using ra::backend::ConvGeometry;
using ra::backend::DenseGeometry;
using ra::backend::KernelMode;
using ra::train::OpTime;
using ra::train::TimingOps;

namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 97) - 1.0f;
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const OpTime* find(const std::vector<OpTime>& times, const std::string& op,
                   const std::string& mode) {
  for (const OpTime& t : times)
    if (t.op == op && t.mode == mode) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("TimingOps forwards calls bit for bit and counts them per op and mode", "[train]") {
  ra::backend::cpu::CpuOps reference(2);
  TimingOps timed(ra::backend::cpu::make_cpu_ops(2));
  REQUIRE(timed.name() == reference.name());
  REQUIRE(timed.threads() == 2);

  // A 2x3x12x12 input, 4 filters of 3x3, no padding: output 2x4x10x10.
  ConvGeometry g;
  g.n = 2, g.c = 3, g.h = 12, g.w = 12, g.k = 4, g.r = 3, g.s = 3, g.p = 10, g.q = 10;
  const auto x = ramp(static_cast<std::size_t>(g.x_size()), 0.03f);
  const auto w = ramp(static_cast<std::size_t>(g.w_size()), 0.02f);
  const auto bias = ramp(4, 0.1f);
  const auto dy = ramp(static_cast<std::size_t>(g.y_size()), 0.01f);

  std::vector<float> y_ref(static_cast<std::size_t>(g.y_size())), y(y_ref.size());
  reference.conv2d_forward(g, x.data(), w.data(), bias.data(), ra::backend::Activation::none,
                           y_ref.data());
  timed.conv2d_forward(g, x.data(), w.data(), bias.data(), ra::backend::Activation::none, y.data());
  REQUIRE(same_bits(y, y_ref));

  std::vector<float> dw_ref(w.size()), dw(w.size());
  reference.conv2d_backward_filter(g, x.data(), dy.data(), dw_ref.data(),
                                   KernelMode::deterministic);
  for (int i = 0; i < 2; ++i) {
    timed.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), KernelMode::deterministic);
    REQUIRE(same_bits(dw, dw_ref));
  }
  timed.conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), KernelMode::nondeterministic);
  // Nondeterministic: the summation order may differ, the value may not (much).
  for (std::size_t i = 0; i < dw.size(); ++i) REQUIRE(dw[i] == Approx(dw_ref[i]).margin(1e-4));

  DenseGeometry d{3, 5, 2};
  const auto dx_in = ramp(15, 0.05f), dw_in = ramp(10, 0.04f);
  const std::vector<std::int32_t> labels = {0, 1, 1};
  std::vector<float> logits_ref(6), logits(6), grad_ref(6), grad(6);
  reference.dense_forward(d, dx_in.data(), dw_in.data(), nullptr, ra::backend::Activation::none,
                          logits_ref.data());
  timed.dense_forward(d, dx_in.data(), dw_in.data(), nullptr, ra::backend::Activation::none,
                      logits.data());
  REQUIRE(same_bits(logits, logits_ref));
  const float loss_ref = reference.softmax_cross_entropy(
      3, 2, logits_ref.data(), labels.data(), grad_ref.data(), KernelMode::deterministic);
  const float loss = timed.softmax_cross_entropy(3, 2, logits.data(), labels.data(), grad.data(),
                                                 KernelMode::deterministic);
  REQUIRE(std::bit_cast<std::uint32_t>(loss) == std::bit_cast<std::uint32_t>(loss_ref));
  REQUIRE(same_bits(grad, grad_ref));

  const auto times = timed.times();
  REQUIRE(times.size() == 5);
  const OpTime* fwd = find(times, "conv2d_forward", "");
  const OpTime* det = find(times, "conv2d_backward_filter", "deterministic");
  const OpTime* nondet = find(times, "conv2d_backward_filter", "nondeterministic");
  REQUIRE(fwd != nullptr);
  REQUIRE(det != nullptr);
  REQUIRE(nondet != nullptr);
  REQUIRE(fwd->calls == 1);
  REQUIRE(det->calls == 2);
  REQUIRE(nondet->calls == 1);
  REQUIRE(find(times, "dense_forward", "") != nullptr);
  REQUIRE(find(times, "softmax_cross_entropy", "deterministic") != nullptr);
  for (const OpTime& t : times) REQUIRE(t.seconds > 0.0);
  // Report order: the op list, forward before backward.
  REQUIRE(times.front().op == "conv2d_forward");

  timed.reset();
  REQUIRE(timed.times().empty());
}

TEST_CASE("TimingOps counts every kernel mode in a slot of its own", "[train]") {
  // The last mode, batch_invariant, once landed in the next op's first slot (one slot short).
  TimingOps timed(ra::backend::cpu::make_cpu_ops(1));
  DenseGeometry d{3, 5, 2};
  const auto x = ramp(15, 0.05f), dy = ramp(6, 0.04f);
  std::vector<float> db(2);
  const KernelMode modes[] = {KernelMode::deterministic, KernelMode::nondeterministic,
                              KernelMode::autotune, KernelMode::batch_invariant};
  for (const KernelMode mode : modes) timed.dense_backward_bias(d, dy.data(), db.data(), mode);
  timed.dense_backward_bias(d, dy.data(), db.data(), KernelMode::batch_invariant);
  const auto times = timed.times();
  REQUIRE(times.size() == 4);
  for (const KernelMode mode : modes) {
    const OpTime* t = find(times, "dense_backward_bias", ra::backend::to_string(mode));
    REQUIRE(t != nullptr);
    CHECK(t->calls == (mode == KernelMode::batch_invariant ? 2 : 1));
  }
}

TEST_CASE("A training run through TimingOps is bitwise identical and fully counted", "[train]") {
  ra::spec::ExperimentSpec s =
      ra::spec::load_spec(std::string(REPRO_AUDIT_SOURCE_DIR) + "/configs/quick.json");
  s.data.eval.reset();  // evaluation would add forward calls the count below does not expect
  s.train.max_steps = 5;
  const ra::train::LoadedData data = ra::train::load_data(s);

  ra::train::RunOptions plain;
  plain.threads = 2;
  plain.make_backend = [](int t) { return ra::backend::cpu::make_cpu_ops(t); };
  TimingOps* timer = nullptr;
  ra::train::RunOptions timed = plain;
  timed.make_backend = [&timer](int t) {
    auto ops = std::make_unique<TimingOps>(ra::backend::cpu::make_cpu_ops(t));
    timer = ops.get();
    return std::unique_ptr<ra::backend::Ops>(std::move(ops));
  };

  ra::train::Trainer a(s, data, plain), b(s, data, timed);
  const auto ra_ = a.run(), rb = b.run();
  REQUIRE(rb.steps == 5);
  REQUIRE(std::bit_cast<std::uint32_t>(ra_.final_loss) ==
          std::bit_cast<std::uint32_t>(rb.final_loss));
  REQUIRE(ra::nn::parameters_digest(a.model()) == ra::nn::parameters_digest(b.model()));

  // quick.json: one conv2d, two dense layers, one dropout, deterministic mode; 5 steps.
  REQUIRE(timer != nullptr);
  const auto times = timer->times();
  // The conv's max-pool is computed by its forward pass: one call, timed whole.
  REQUIRE(find(times, "conv2d_forward_maxpool", "")->calls == 5);
  REQUIRE(find(times, "conv2d_forward", "") == nullptr);
  REQUIRE(find(times, "maxpool2d_forward", "") == nullptr);
  REQUIRE(find(times, "dense_forward", "")->calls == 10);
  REQUIRE(find(times, "dropout_forward", "")->calls == 5);
  // The pool's backward and the conv's (both gradients: it has a bias) in one call, timed whole
  // (the CPU backend's fused pass).
  REQUIRE(find(times, "conv2d_backward_maxpool", "deterministic")->calls == 5);
  REQUIRE(find(times, "maxpool2d_backward", "deterministic") == nullptr);
  REQUIRE(find(times, "conv2d_backward_filter_bias", "deterministic") == nullptr);
  REQUIRE(find(times, "conv2d_backward_filter", "deterministic") == nullptr);
  REQUIRE(find(times, "conv2d_backward_bias", "deterministic") == nullptr);
  REQUIRE(find(times, "dense_backward_weight", "deterministic")->calls == 10);
  REQUIRE(find(times, "softmax_cross_entropy", "deterministic")->calls == 5);
  REQUIRE(find(times, "conv2d_backward_maxpool", "nondeterministic") == nullptr);
  for (const OpTime& t : times) REQUIRE(t.seconds > 0.0);
}
