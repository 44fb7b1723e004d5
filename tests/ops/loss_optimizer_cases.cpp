// Loss cases (softmax_cross_entropy, mean_squared_error, loss_when_done), optimizer cases
// (optimizer_update, optimizer_update_digested: bit for bit the per-element rule of
// optim/rules/update_rules.h) and digest cases (Ops::digest: bit for bit core/digest.h on the
// host).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "backend/cpu/reference/reference_ops.h"
#include "core/digest.h"
#include "ops/case_support.h"
#include "optim/rules/update_digests.h"
#include "optim/rules/update_rules.h"

namespace ops_test {
namespace {

namespace ref = ra::backend::cpu::reference;
using ra::optim::RuleKind;
using ra::optim::UpdateRule;

// ---- losses ----

struct LossShape {
  const char* name;
  int n, classes;
  float range;  // logits / predictions uniform in [-range, range)
};

const LossShape kLossShapes[] = {
    {"1 x 10", 1, 10, 4.0f},
    {"77 x 10", 77, 10, 4.0f},
    {"128 x 10", 128, 10, 4.0f},
    {"5 x 3, logits +-80 (exp overflows unshifted)", 5, 3, 80.0f},
};

Arrays loss_inputs(const LossShape& s) {
  Arrays a;
  a.f32["x"] = random_values(std::int64_t(s.n) * s.classes, 91, -s.range, s.range);
  for (int i = 0; i < s.n; ++i) a.i32["labels"].push_back((i * 7 + 3) % s.classes);
  a.f32["dx"] = nan_values(std::int64_t(s.n) * s.classes);
  return a;
}

// Softmax cross-entropy: per row, log s with s = sum_j exp(x_j - max) (classes terms; the shift
// x - max rounds by u |x - max| <= u R, which exp turns into a relative error R u), then the mean
// of n row losses. So the loss is within (classes + n + R + 4) u of the exact value relative to
// mean_n(|max| + |log s| + |x_label|) + 1, and each gradient (e^(x - max) / s - onehot) / n
// within (classes + R + 4) u / n.
Expected softmax_reference(const LossShape& s, const Arrays& a, bool with_gradient) {
  const std::vector<float>& x = a.f32.at("x");
  const std::vector<std::int32_t>& labels = a.i32.at("labels");
  std::vector<float> dx(x.size());
  const float loss = ref::softmax_cross_entropy(s.n, s.classes, x.data(), labels.data(), dx.data());
  double range = 0, magnitude = 0;
  for (int i = 0; i < s.n; ++i) {
    const float* row = x.data() + std::size_t(i) * s.classes;
    const double max = *std::max_element(row, row + s.classes);
    double sum = 0;
    for (int j = 0; j < s.classes; ++j) {
      range = std::max(range, max - row[j]);
      sum += std::exp(row[j] - max);
    }
    magnitude += std::abs(max) + std::abs(std::log(sum)) + std::abs(row[labels[i]]);
  }
  Expected e;
  e.f32["loss"] = within({loss}, {float(magnitude / s.n + 1)}, double(s.classes + s.n) + range + 4);
  e.f32["dx"] = with_gradient ? within(dx, std::vector<float>(dx.size(), 1.0f / float(s.n)),
                                       double(s.classes) + range + 4)
                              : exactly(a.f32.at("dx"));  // value only: dx untouched
  return e;
}

// Mean squared error: a mean of n * classes positive squares (scale: the value itself), and
// gradients 2 (p - t) / (n classes): a subtraction, the rounded factor, a product and the
// reference's rounding.
Expected mse_reference(const LossShape& s, const Arrays& a, bool with_gradient) {
  std::vector<float> dx(a.f32.at("x").size());
  const float loss = ref::mean_squared_error(s.n, s.classes, a.f32.at("x").data(),
                                             a.i32.at("labels").data(), dx.data());
  Expected e;
  e.f32["loss"] = within({loss}, {loss}, sum_units(std::int64_t(s.n) * s.classes + 2));
  e.f32["dx"] = with_gradient ? within(dx, abs_of(dx), 4) : exactly(a.f32.at("dx"));
  return e;
}

void add_loss_shape(std::vector<OpCase>& table, const LossShape& s) {
  for (const bool with_gradient : {true, false}) {
    const std::string name = std::string(s.name) + (with_gradient ? "" : ", value only");
    table.push_back(
        {"softmax_cross_entropy", name, true, false, [s] { return loss_inputs(s); },
         [s, with_gradient](Ops& ops, BackendArrays& a, KernelMode mode) {
           a.returned().f32["loss"] = {
               ops.softmax_cross_entropy(s.n, s.classes, a.f32("x"), a.i32("labels"),
                                         with_gradient ? a.f32("dx") : nullptr, mode)};
         },
         [s, with_gradient](const Arrays& a) { return softmax_reference(s, a, with_gradient); }});
    table.push_back(
        {"mean_squared_error", name, true, false, [s] { return loss_inputs(s); },
         [s, with_gradient](Ops& ops, BackendArrays& a, KernelMode mode) {
           a.returned().f32["loss"] = {
               ops.mean_squared_error(s.n, s.classes, a.f32("x"), a.i32("labels"),
                                      with_gradient ? a.f32("dx") : nullptr, mode)};
         },
         [s, with_gradient](const Arrays& a) { return mse_reference(s, a, with_gradient); }});
  }
  // The training step's call: the value read after synchronize(), the gradient always written.
  using Kind = Ops::LossKind;
  for (const Kind kind : {Kind::softmax_cross_entropy, Kind::mean_squared_error}) {
    const bool mse = kind == Kind::mean_squared_error;
    table.push_back({"loss_when_done",
                     std::string(s.name) + (mse ? ", mean_squared_error" : ", softmax"), true,
                     false, [s] { return loss_inputs(s); },
                     [s, kind](Ops& ops, BackendArrays& a, KernelMode mode) {
                       float value = -1.0f;
                       ops.loss_when_done(kind, s.n, s.classes, a.f32("x"), a.i32("labels"),
                                          a.f32("dx"), mode, &value);
                       ops.synchronize();
                       a.returned().f32["loss"] = {value};
                     },
                     [s, mse](const Arrays& a) {
                       return mse ? mse_reference(s, a, true) : softmax_reference(s, a, true);
                     }});
  }
}

// ---- optimizer ----

struct NamedRule {
  const char* name;
  UpdateRule rule;
};

std::vector<NamedRule> rules() {
  UpdateRule sgd;
  sgd.kind = RuleKind::sgd;
  sgd.lr = 0.05f;
  sgd.weight_decay = 0.01f;
  UpdateRule momentum = sgd;
  momentum.kind = RuleKind::sgd_momentum;
  momentum.weight_decay = 0;
  momentum.momentum = 0.9f, momentum.one_minus_dampening = 0.75f, momentum.nesterov = true;
  UpdateRule first = momentum;
  first.nesterov = false, first.first_step = true;
  UpdateRule adam = sgd;
  adam.kind = RuleKind::adam;
  adam.beta1 = 0.9f, adam.beta2 = 0.999f, adam.one_minus_beta1 = 0.1f;
  adam.one_minus_beta2 = 0.001f, adam.bias_correction2_sqrt = 0.3f, adam.eps = 1e-7f;
  UpdateRule rms = sgd;
  rms.kind = RuleKind::rmsprop;
  rms.weight_decay = 0;
  rms.rho = 0.9f, rms.one_minus_rho = 0.1f, rms.eps = 1e-7f;
  UpdateRule ada = rms;
  ada.kind = RuleKind::adadelta;
  ada.rho = 0.95f, ada.one_minus_rho = 0.05f, ada.eps = 1e-6f, ada.lr = 1.0f;
  return {{"sgd, weight decay", sgd},
          {"momentum, nesterov", momentum},
          {"momentum, first step", first},
          {"adam, weight decay", adam},
          {"rmsprop", rms},
          {"adadelta", ada}};
}

Arrays optimizer_inputs(std::int64_t count) {
  Arrays a;
  a.f32["value"] = random_values(count, 101, -2.0f, 2.0f);
  a.f32["grad"] = random_values(count, 102);
  a.f32["s0"] = abs_of(random_values(count, 103));
  a.f32["s1"] = abs_of(random_values(count, 104));
  return a;
}

float* state(BackendArrays& a, const char* name, bool used) {
  return used ? a.f32(name) : nullptr;
}

// value, s0, s1 after the rule, element by element (states a rule does not use stay as they are).
Arrays updated(const UpdateRule& rule, const Arrays& a) {
  Arrays out = a;
  std::vector<float>&value = out.f32["value"], &s0 = out.f32["s0"], &s1 = out.f32["s1"];
  for (std::size_t j = 0; j < value.size(); ++j) {
    ra::optim::apply_update(rule, value[j], a.f32.at("grad")[j],
                            ra::optim::uses_s0(rule.kind) ? &s0[j] : nullptr,
                            ra::optim::uses_s1(rule.kind) ? &s1[j] : nullptr);
  }
  return out;
}

std::vector<std::uint8_t> bytes_of(const std::vector<ra::xxh3::Hash128>& hashes) {
  std::vector<std::uint8_t> bytes(hashes.size() * sizeof(ra::xxh3::Hash128));
  if (!bytes.empty()) std::memcpy(bytes.data(), hashes.data(), bytes.size());
  return bytes;
}

// The chunk digests of a float array (core/digest.h).
std::vector<std::uint8_t> chunk_digests(const std::vector<float>& values) {
  const std::size_t bytes = values.size() * sizeof(float);
  std::vector<ra::xxh3::Hash128> hashes(ra::digest_chunk_count(bytes));
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    hashes[i] = ra::digest_chunk(values.data(), bytes, i);
  }
  return bytes_of(hashes);
}

const char* const kTensors[] = {"value", "grad", "s0", "s1"};

void add_optimizer(std::vector<OpCase>& table, const NamedRule& r, std::int64_t count) {
  const UpdateRule rule = r.rule;
  const bool s0 = ra::optim::uses_s0(rule.kind), s1 = ra::optim::uses_s1(rule.kind);
  const std::string name = std::string(r.name) + ", " + std::to_string(count) + " elements";
  const auto expected_state = [rule](const Arrays& a) {
    const Arrays out = updated(rule, a);
    Expected e;
    for (const char* t : {"value", "s0", "s1"}) e.f32[t] = exactly(out.f32.at(t));
    return e;
  };
  table.push_back({"optimizer_update", name, false, false,
                   [count] { return optimizer_inputs(count); },
                   [=](Ops& ops, BackendArrays& a, KernelMode) {
                     ops.optimizer_update(rule, count, a.f32("value"), a.f32("grad"),
                                          state(a, "s0", s0), state(a, "s1", s1));
                   },
                   expected_state});
  // A backend that does not fuse the digests returns false having changed nothing: the caller
  // then updates and digests from memory, as this case does (an update applied twice fails it).
  table.push_back(
      {"optimizer_update_digested", name, false, false, [count] { return optimizer_inputs(count); },
       [=](Ops& ops, BackendArrays& a, KernelMode) {
         const std::size_t chunks = ra::digest_chunk_count(std::size_t(count) * sizeof(float));
         std::vector<ra::xxh3::Hash128> digests[4];
         for (auto& d : digests) d.resize(chunks);
         std::atomic<std::int64_t> nanoseconds{0};
         const ra::optim::ChunkDigestTargets targets{
             digests[0].data(), digests[1].data(), s0 ? digests[2].data() : nullptr,
             s1 ? digests[3].data() : nullptr, &nanoseconds};
         const bool fused =
             ops.optimizer_update_digested(rule, count, a.f32("value"), a.f32("grad"),
                                           state(a, "s0", s0), state(a, "s1", s1), targets);
         if (!fused) {
           ops.optimizer_update(rule, count, a.f32("value"), a.f32("grad"), state(a, "s0", s0),
                                state(a, "s1", s1));
         }
         for (int t = 0; t < 4; ++t) {
           if ((t == 2 && !s0) || (t == 3 && !s1)) continue;
           if (fused) {
             a.returned().u8[std::string(kTensors[t]) + " digests"] = bytes_of(digests[t]);
           } else {
             std::vector<float> host(static_cast<std::size_t>(count));
             a.memory().download(host.data(), a.f32(kTensors[t]), host.size() * sizeof(float));
             a.returned().u8[std::string(kTensors[t]) + " digests"] = chunk_digests(host);
           }
         }
       },
       [=](const Arrays& a) {
         Expected e = expected_state(a);
         const Arrays out = updated(rule, a);
         for (int t = 0; t < 4; ++t) {
           if ((t == 2 && !s0) || (t == 3 && !s1)) continue;
           e.u8[std::string(kTensors[t]) + " digests"] = chunk_digests(out.f32.at(kTensors[t]));
         }
         return e;
       }});
}

// ---- digest ----

// Tensors of 1 element, one short of a 64 KiB chunk, and three chunks and a bit, digested in one
// call (the device backend batches them).
void add_digest(std::vector<OpCase>& table) {
  const std::vector<ra::Shape> shapes = {{1}, {16383}, {3, 7, 2341}};
  table.push_back({"digest", "3 tensors: 1, 16383 and 49161 floats", false, false,
                   [shapes] {
                     Arrays a;
                     for (std::size_t t = 0; t < shapes.size(); ++t) {
                       a.f32["t" + std::to_string(t)] =
                           random_values(ra::element_count(shapes[t]), 111 + std::uint32_t(t));
                     }
                     return a;
                   },
                   [shapes](Ops& ops, BackendArrays& a, KernelMode) {
                     std::vector<ra::Tensor> tensors;
                     std::vector<const ra::Tensor*> pointers;
                     for (std::size_t t = 0; t < shapes.size(); ++t) {
                       tensors.emplace_back(shapes[t], ops.memory());
                       ops.memory().copy(tensors.back().data(), a.f32("t" + std::to_string(t)),
                                         tensors.back().bytes());
                     }
                     for (const ra::Tensor& t : tensors) pointers.push_back(&t);
                     const std::vector<ra::Digest128> digests = ops.digest(pointers);
                     std::vector<std::uint8_t>& bytes = a.returned().u8["digests"];
                     bytes.resize(digests.size() * sizeof(ra::Digest128));
                     std::memcpy(bytes.data(), digests.data(), bytes.size());
                   },
                   [shapes](const Arrays& a) {
                     std::vector<ra::Digest128> digests;
                     for (std::size_t t = 0; t < shapes.size(); ++t) {
                       ra::Tensor host(shapes[t]);
                       const std::vector<float>& values = a.f32.at("t" + std::to_string(t));
                       std::copy(values.begin(), values.end(), host.begin());
                       digests.push_back(ra::digest(host));
                     }
                     Expected e;
                     e.u8["digests"].resize(digests.size() * sizeof(ra::Digest128));
                     std::memcpy(e.u8["digests"].data(), digests.data(), e.u8["digests"].size());
                     return e;
                   }});
}

}  // namespace

void add_loss_cases(std::vector<OpCase>& table) {
  for (const LossShape& s : kLossShapes) add_loss_shape(table, s);
}

void add_optimizer_cases(std::vector<OpCase>& table) {
  for (const NamedRule& r : rules()) {
    for (const std::int64_t count : {1, 17, 16385}) add_optimizer(table, r, count);
  }
}

void add_digest_cases(std::vector<OpCase>& table) {
  add_digest(table);
}

}  // namespace ops_test
