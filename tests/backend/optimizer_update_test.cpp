// CpuOps::optimizer_update (per-kind vectorised loops, on the backend's threads) against the
// scalar rule it must equal: optim::apply_update element by element, bit for bit, for every rule
// kind, with and without weight decay, odd counts and 1-3 threads.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend_test_util.h"
#include "core/digest.h"
#include "optim/rules/update_digests.h"
#include "optim/rules/update_rules.h"

using namespace ra;
using optim::RuleKind;
using optim::UpdateRule;

namespace {

std::vector<UpdateRule> rules() {
  std::vector<UpdateRule> all;
  for (const float decay : {0.0f, 0.01f}) {
    UpdateRule sgd;
    sgd.kind = RuleKind::sgd;
    sgd.lr = 0.05f;
    sgd.weight_decay = decay;
    all.push_back(sgd);
    for (const bool nesterov : {false, true}) {
      for (const bool first : {false, true}) {
        UpdateRule m = sgd;
        m.kind = RuleKind::sgd_momentum;
        m.momentum = 0.9f;
        m.one_minus_dampening = 0.75f;
        m.nesterov = nesterov;
        m.first_step = first;
        all.push_back(m);
      }
    }
    UpdateRule adam = sgd;
    adam.kind = RuleKind::adam;
    adam.beta1 = 0.9f, adam.beta2 = 0.999f, adam.one_minus_beta1 = 0.1f;
    adam.one_minus_beta2 = 0.001f, adam.bias_correction2_sqrt = 0.3f, adam.eps = 1e-7f;
    all.push_back(adam);
    UpdateRule rms = sgd;
    rms.kind = RuleKind::rmsprop;
    rms.rho = 0.9f, rms.one_minus_rho = 0.1f, rms.eps = 1e-7f;
    all.push_back(rms);
    UpdateRule ada = rms;
    ada.kind = RuleKind::adadelta;
    ada.rho = 0.95f, ada.one_minus_rho = 0.05f, ada.eps = 1e-6f, ada.lr = 1.0f;
    all.push_back(ada);
  }
  return all;
}

using optim::uses_s0;
using optim::uses_s1;

// The table the CPU loops and these tests rely on, spelled out.
static_assert(!uses_s0(RuleKind::sgd) && !uses_s1(RuleKind::sgd));
static_assert(uses_s0(RuleKind::sgd_momentum) && !uses_s1(RuleKind::sgd_momentum));
static_assert(uses_s0(RuleKind::adam) && uses_s1(RuleKind::adam));
static_assert(uses_s0(RuleKind::rmsprop) && !uses_s1(RuleKind::rmsprop));
static_assert(uses_s0(RuleKind::adadelta) && uses_s1(RuleKind::adadelta));

}  // namespace

TEST_CASE("CpuOps::optimizer_update equals apply_update element by element, bit for bit",
          "[optimizer]") {
  for (const UpdateRule& rule : rules()) {
    for (const std::int64_t count : {1, 17, 16385, 100003}) {
      for (const int threads : {1, 2, 3}) {
        INFO("kind " << int(rule.kind) << " decay " << rule.weight_decay << " nesterov "
                     << rule.nesterov << " first " << rule.first_step << " count " << count
                     << " threads " << threads);
        const auto n = static_cast<std::size_t>(count);
        std::vector<float> value = test::random_values(n, 61, -2.0f, 2.0f);
        const std::vector<float> grad = test::random_values(n, 62, -1.0f, 1.0f);
        std::vector<float> s0 = test::abs_of(test::random_values(n, 63));
        std::vector<float> s1 = test::abs_of(test::random_values(n, 64));
        std::vector<float> ev = value, e0 = s0, e1 = s1;
        for (std::size_t j = 0; j < n; ++j) {
          optim::apply_update(rule, ev[j], grad[j], uses_s0(rule.kind) ? &e0[j] : nullptr,
                              uses_s1(rule.kind) ? &e1[j] : nullptr);
        }
        backend::cpu::CpuOps ops(threads);
        ops.optimizer_update(rule, count, value.data(), grad.data(),
                             uses_s0(rule.kind) ? s0.data() : nullptr,
                             uses_s1(rule.kind) ? s1.data() : nullptr);
        REQUIRE(test::same_bits(value, ev));
        REQUIRE(test::same_bits(s0, e0));
        REQUIRE(test::same_bits(s1, e1));
      }
    }
  }
}

TEST_CASE("CpuOps::optimizer_update leaves the states a rule does not use untouched",
          "[optimizer]") {
  // Both state arrays passed for every kind: the result is that of the null-state call, and an
  // unused array keeps its bits.
  for (const UpdateRule& rule : rules()) {
    INFO("kind " << int(rule.kind) << " decay " << rule.weight_decay);
    const std::size_t n = 1001;
    const std::vector<float> value0 = test::random_values(n, 71, -2.0f, 2.0f);
    const std::vector<float> grad = test::random_values(n, 72, -1.0f, 1.0f);
    const std::vector<float> s0_0 = test::abs_of(test::random_values(n, 73));
    const std::vector<float> s1_0 = test::abs_of(test::random_values(n, 74));
    std::vector<float> value = value0, s0 = s0_0, s1 = s1_0;
    std::vector<float> ev = value0, e0 = s0_0, e1 = s1_0;
    backend::cpu::CpuOps ops(2);
    ops.optimizer_update(rule, std::int64_t(n), value.data(), grad.data(), s0.data(), s1.data());
    ops.optimizer_update(rule, std::int64_t(n), ev.data(), grad.data(),
                         uses_s0(rule.kind) ? e0.data() : nullptr,
                         uses_s1(rule.kind) ? e1.data() : nullptr);
    REQUIRE(test::same_bits(value, ev));
    REQUIRE(test::same_bits(s0, e0));
    REQUIRE(test::same_bits(s1, e1));
    if (!uses_s0(rule.kind)) REQUIRE(test::same_bits(s0, s0_0));
    if (!uses_s1(rule.kind)) REQUIRE(test::same_bits(s1, s1_0));
  }
}

TEST_CASE("CpuOps::optimizer_update_digested updates like optimizer_update and digests the result",
          "[optimizer][digest]") {
  // The fused update must change nothing in the update, and its chunk digests must be those of
  // the tensors hashed afterwards from memory (digest_chunk), chunk by chunk: last chunks short,
  // a single short chunk, an exact chunk.
  for (const UpdateRule& rule : rules()) {
    for (const std::int64_t count : {1, 17, 16384, 16385, 50001}) {
      for (const int threads : {1, 3}) {
        INFO("kind " << int(rule.kind) << " decay " << rule.weight_decay << " count " << count
                     << " threads " << threads);
        const auto n = static_cast<std::size_t>(count);
        const std::vector<float> grad = test::random_values(n, 82, -1.0f, 1.0f);
        std::vector<float> value = test::random_values(n, 81, -2.0f, 2.0f);
        std::vector<float> s0 = test::abs_of(test::random_values(n, 83));
        std::vector<float> s1 = test::abs_of(test::random_values(n, 84));
        std::vector<float> ev = value, e0 = s0, e1 = s1;
        float* const s0p = uses_s0(rule.kind) ? s0.data() : nullptr;
        float* const s1p = uses_s1(rule.kind) ? s1.data() : nullptr;

        backend::cpu::CpuOps ops(threads);
        ops.optimizer_update(rule, count, ev.data(), grad.data(),
                             uses_s0(rule.kind) ? e0.data() : nullptr,
                             uses_s1(rule.kind) ? e1.data() : nullptr);
        const std::size_t bytes = n * sizeof(float);
        const std::size_t chunks = digest_chunk_count(bytes);
        std::vector<xxh3::Hash128> dv(chunks), dg(chunks), d0(chunks), d1(chunks);
        std::atomic<std::int64_t> hash_ns{0};
        const optim::ChunkDigestTargets targets{dv.data(), dg.data(), s0p ? d0.data() : nullptr,
                                                s1p ? d1.data() : nullptr, &hash_ns};
        REQUIRE(ops.optimizer_update_digested(rule, count, value.data(), grad.data(), s0p, s1p,
                                              targets));
        REQUIRE(test::same_bits(value, ev));
        REQUIRE(test::same_bits(s0, e0));
        REQUIRE(test::same_bits(s1, e1));
        CHECK(hash_ns.load() > 0);
        for (std::size_t c = 0; c < chunks; ++c) {
          INFO("chunk " << c << " of " << chunks);
          REQUIRE(dv[c] == digest_chunk(value.data(), bytes, c));
          REQUIRE(dg[c] == digest_chunk(grad.data(), bytes, c));
          if (s0p) REQUIRE(d0[c] == digest_chunk(s0.data(), bytes, c));
          if (s1p) REQUIRE(d1[c] == digest_chunk(s1.data(), bytes, c));
        }
        // And combined, the digest of the whole tensor.
        REQUIRE(digest_from_chunks(DType::f32, ra::Shape{count}, dv) ==
                digest_bytes(DType::f32, ra::Shape{count}, value.data(), bytes));
      }
    }
  }
}
