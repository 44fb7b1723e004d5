// TimingOps over a backend with a DeviceTimer (the CUDA backend's CUDA events, stood in for here
// by a fake that reports a fixed device time per interval): every op call is bracketed by one
// start()/stop() pair tagged with its op and mode, the table holds the DEVICE times once the
// backend has been synchronized (not the host time around the calls), calls are counted at once,
// and reset() drops intervals still queued.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "support/forwarding_ops.h"
#include "train/op_timer.h"

using ra::backend::KernelMode;
using ra::train::OpTime;
using ra::train::TimingOps;

namespace {

// Every interval "took" 1 ms of device time; what was started and stopped is logged.
struct FakeTimerLog {
  int started = 0, stopped = 0, collects = 0;
  bool open = false;
  std::vector<int> pending;  // tags stopped since the last collect
};

class FakeDeviceTimer final : public ra::backend::DeviceTimer {
 public:
  explicit FakeDeviceTimer(FakeTimerLog& log) : log_(log) {}
  void start() override {
    REQUIRE_FALSE(log_.open);  // intervals do not nest
    log_.open = true;
    ++log_.started;
  }
  void stop(int tag) noexcept override {
    log_.open = false;
    ++log_.stopped;
    log_.pending.push_back(tag);
  }
  void collect(const std::function<void(int, double)>& add) override {
    ++log_.collects;
    for (int tag : log_.pending) add(tag, 1e-3);
    log_.pending.clear();
  }

 private:
  FakeTimerLog& log_;
};

class TimedDeviceOps final : public ra::test::ForwardingOps {
 public:
  explicit TimedDeviceOps(FakeTimerLog& log) : log_(log) {}
  std::unique_ptr<ra::backend::DeviceTimer> make_device_timer() override {
    return std::make_unique<FakeDeviceTimer>(log_);
  }

 private:
  FakeTimerLog& log_;
};

const OpTime* find_time(const std::vector<OpTime>& times, const std::string& op,
                        const std::string& mode) {
  for (const OpTime& t : times)
    if (t.op == op && t.mode == mode) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("TimingOps times a device backend's ops in device time", "[train]") {
  FakeTimerLog log;
  TimingOps timed(std::make_unique<TimedDeviceOps>(log));
  REQUIRE(timed.device_timed());

  std::vector<float> x(64, 0.5f), y(64), dy(64, 0.25f), dx(64);
  for (int i = 0; i < 3; ++i) {
    timed.activation_forward(ra::backend::Activation::relu, 64, x.data(), y.data());
  }
  ra::backend::DenseGeometry g{4, 4, 4};
  std::vector<float> w(16, 0.1f), gx(16, 0.2f), gdy(16, 0.3f), gdw(16);
  timed.dense_backward_weight(g, gx.data(), gdy.data(), gdw.data(), KernelMode::deterministic);
  timed.dense_backward_weight(g, gx.data(), gdy.data(), gdw.data(), KernelMode::nondeterministic);
  CHECK(log.started == 5);
  CHECK(log.stopped == 5);
  CHECK_FALSE(log.open);

  // Counted at once; timed only when the backend was waited for.
  const std::vector<OpTime> before = timed.times();
  REQUIRE(find_time(before, "activation_forward", "") != nullptr);
  CHECK(find_time(before, "activation_forward", "")->calls == 3);
  CHECK(find_time(before, "activation_forward", "")->seconds == 0.0);

  timed.synchronize();
  CHECK(log.collects == 1);
  const std::vector<OpTime> after = timed.times();
  const OpTime* act = find_time(after, "activation_forward", "");
  REQUIRE(act != nullptr);
  CHECK(act->calls == 3);
  // Exactly the device time: 3 intervals of 1 ms, whatever the host time around the calls.
  CHECK(act->seconds == Approx(3e-3).epsilon(1e-9));
  const OpTime* det = find_time(after, "dense_backward_weight", "deterministic");
  const OpTime* nondet = find_time(after, "dense_backward_weight", "nondeterministic");
  REQUIRE(det != nullptr);
  REQUIRE(nondet != nullptr);
  CHECK(det->calls == 1);
  CHECK(det->seconds == Approx(1e-3).epsilon(1e-9));
  CHECK(nondet->seconds == Approx(1e-3).epsilon(1e-9));

  // reset() drops what is still queued: the next table starts from nothing.
  timed.activation_forward(ra::backend::Activation::relu, 64, x.data(), y.data());
  timed.reset();
  CHECK(log.pending.empty());
  CHECK(timed.times().empty());
  timed.synchronize();
  CHECK(timed.times().empty());
}

TEST_CASE("with a device timer a composite op is timed by its parts", "[train]") {
  // The CUDA backend fuses no conv pair: the GPU table shows the filter and bias gradients apiece.
  FakeTimerLog log;
  TimingOps timed(std::make_unique<TimedDeviceOps>(log));
  ra::backend::ConvGeometry g;
  g.n = 1, g.c = 1, g.h = 4, g.w = 4, g.k = 2, g.r = 3, g.s = 3, g.p = 2, g.q = 2;
  std::vector<float> x(16, 0.5f), dy(8, 0.25f), dw(18), db(2);
  timed.conv2d_backward_filter_bias(g, x.data(), dy.data(), dw.data(), db.data(),
                                    KernelMode::deterministic, KernelMode::nondeterministic);
  timed.synchronize();
  const std::vector<OpTime> t = timed.times();
  CHECK(find_time(t, "conv2d_backward_filter_bias", "deterministic") == nullptr);
  REQUIRE(find_time(t, "conv2d_backward_filter", "deterministic") != nullptr);
  REQUIRE(find_time(t, "conv2d_backward_bias", "nondeterministic") != nullptr);
  CHECK(find_time(t, "conv2d_backward_bias", "nondeterministic")->seconds ==
        Approx(1e-3).epsilon(1e-9));
  CHECK(log.stopped == 2);
}

TEST_CASE("TimingOps over the CPU backend keeps host clocks", "[train]") {
  TimingOps timed(ra::backend::cpu::make_cpu_ops(1));
  CHECK_FALSE(timed.device_timed());
  std::vector<float> x(64, 0.5f), y(64);
  timed.activation_forward(ra::backend::Activation::relu, 64, x.data(), y.data());
  const std::vector<OpTime> t = timed.times();
  REQUIRE(t.size() == 1);
  CHECK(t[0].calls == 1);
  CHECK(t[0].seconds > 0.0);
}
