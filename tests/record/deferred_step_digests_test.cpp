// The recorder on a device backend that hands a step's digests over only at its next
// synchronize() (Ops::digest_when_done, as the CUDA backend does, so that the device hashes with
// no wait of their own). Simulated on the CPU: host memory reported as a device's. The
// recorder must write each step one step late, wait for the last one before an epoch record, a
// resume point, the end record and a resumed run's new trainer, and record what the plain CPU run
// records, digest for digest, in a trace file its reader accepts.
#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record/environment.h"
#include "record/recorder.h"
#include "record/resume_state.h"
#include "spec/parse.h"
#include "support/fake_device_memory.h"
#include "support/forwarding_ops.h"
#include "support/temp_dir.h"
#include "trace/trace_io.h"
#include "train/checkpoint.h"
#include "train/observer_list.h"
#include "train/trainer.h"

namespace {

using ra::test::FakeDeviceMemory;

// What one backend was asked, kept past its trainer.
struct Requests {
  int made = 0;                 // digest_when_done calls
  std::size_t undelivered = 0;  // of them, not stored by the backend's last synchronize()
};

// Digests each request as it comes (in order with the work queued before, as the CUDA stream
// orders them) and stores them at synchronize() only; with `deliver` false, never (a broken
// backend). Declines the fused update, as the CUDA backend does.
class LateDigestOps final : public ra::test::ForwardingOps {
 public:
  LateDigestOps(FakeDeviceMemory& memory, bool deliver, Requests& requests)
      : ForwardingOps(2), memory_(memory), deliver_(deliver), requests_(requests) {}
  ~LateDigestOps() override { requests_.undelivered = pending_.size(); }
  std::string name() const override { return "fake-device"; }
  ra::Memory& memory() override { return memory_; }
  bool optimizer_update_digested(const ra::optim::UpdateRule&, std::int64_t, float*, const float*,
                                 float*, float*, const ra::optim::ChunkDigestTargets&) override {
    return false;
  }
  void digest_when_done(const std::vector<const ra::Tensor*>& tensors,
                        std::shared_ptr<std::vector<ra::Digest128>> out) override {
    ++requests_.made;
    out->clear();  // what a reader before synchronize() would see
    pending_.push_back({std::move(out), digest(tensors)});
  }
  void synchronize() override {
    ForwardingOps::synchronize();
    if (deliver_) {
      for (Pending& p : pending_) *p.out = std::move(p.digests);
      pending_.clear();
    }
  }

 private:
  struct Pending {
    std::shared_ptr<std::vector<ra::Digest128>> out;
    std::vector<ra::Digest128> digests;
  };
  FakeDeviceMemory& memory_;
  bool deliver_;
  Requests& requests_;
  std::vector<Pending> pending_;
};

ra::spec::ExperimentSpec late_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 6,
    "data": {"train": {"format": "random", "samples": 40, "shape": [1, 8, 8], "classes": 3},
             "eval": {"format": "random", "samples": 12, "shape": [1, 8, 8], "classes": 3,
                      "seed": 2},
             "batch_size": 8},
    "model": {"input": [1, 8, 8], "layers": [
      {"type": "conv2d", "filters": 3, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "adam", "lr": 0.01},
    "train": {"epochs": 3}})"),
                              ".");
}

struct Backends {
  FakeDeviceMemory memory;
  std::deque<Requests> made;  // one per trainer (a deque: each stays where it is)
  bool deliver = true;
};

ra::train::RunOptions options_for(Backends* late) {
  ra::train::RunOptions options;
  options.threads = 2;
  if (late != nullptr) {
    options.make_backend = [late](int) {
      return std::make_unique<LateDigestOps>(late->memory, late->deliver,
                                             late->made.emplace_back());
    };
  }
  return options;
}

// Trains with a recorder writing `file`, stopping after `interrupt` steps (0: never) and going on
// in a new trainer from the checkpoint, as an audit's resumed run does; `pass` steps get resume
// points as the run passes them. Returns the trace as its reader reads it back.
ra::trace::Trace record_to_file(const ra::spec::ExperimentSpec& spec, Backends* late,
                                const std::filesystem::path& file, std::int64_t interrupt,
                                std::vector<std::int64_t> pass) {
  const auto data = ra::train::load_data(spec);
  ra::train::RunOptions options = options_for(late);
  if (interrupt > 0) options.interrupt_at = interrupt;
  auto trainer = std::make_unique<ra::train::Trainer>(spec, data, options);
  // What a trace's reader asks of its header (an audit's has more: audit/audit_run.cpp).
  ra::trace::TraceHeader header;
  header.spec = ra::spec::to_json(spec);
  header.spec_digest = ra::trace::spec_digest_of(header.spec).hex();
  header.backend = trainer->ops().name();
  header.threads = trainer->threads();
  header.seed_group = "same";
  header.determinism = {{"mode", "deterministic"}, {"ops", nlohmann::json::object()}};
  header.environment = ra::record::environment_fingerprint(trainer->threads(), header.backend);
  ra::record::Recorder recorder(std::move(header), 2, file);
  ra::record::ResumeStateRecorder states(recorder, std::move(pass));
  ra::train::ObserverList observers;
  observers.add(&states);
  observers.add(&recorder);
  ra::train::TrainResult result = trainer->run(&observers);
  if (result.interrupted) {
    const ra::train::Checkpoint checkpoint = trainer->checkpoint(result.position);
    // The stopped trainer's backend goes with it: nothing it still owes may be lost.
    trainer.reset();
    options.interrupt_at.reset();
    trainer = std::make_unique<ra::train::Trainer>(spec, data, options);
    trainer->restore(checkpoint, ra::train::RestoreSkips{});
    states.expect_resume(result.position.step, 1, 0.0, 0.0);
    result = trainer->run(&observers);
  }
  recorder.finish(*trainer, result);
  return ra::trace::read_trace(file);
}

void require_same_records(const ra::trace::Trace& got, const ra::trace::Trace& want) {
  REQUIRE(got.steps.size() == want.steps.size());
  for (std::size_t s = 0; s < got.steps.size(); ++s) {
    INFO("step " << s);
    REQUIRE(got.steps[s].step == want.steps[s].step);
    REQUIRE(got.steps[s].loss_bits == want.steps[s].loss_bits);
    REQUIRE(got.steps[s].batch_inputs == want.steps[s].batch_inputs);
    REQUIRE(got.steps[s].grads == want.steps[s].grads);
    REQUIRE(got.steps[s].weights == want.steps[s].weights);
    REQUIRE(got.steps[s].optimizer_state == want.steps[s].optimizer_state);
  }
  REQUIRE(got.epochs.size() == want.epochs.size());
  for (std::size_t e = 0; e < got.epochs.size(); ++e) {
    REQUIRE(got.epochs[e].eval_loss == want.epochs[e].eval_loss);
  }
  REQUIRE(got.final->weights == want.final->weights);
}

}  // namespace

TEST_CASE("a device backend's step digests are recorded one step late, as the CPU records them",
          "[record]") {
  const auto spec = late_spec();
  ra::test::TempDir dir;
  const auto plain = record_to_file(spec, nullptr, dir.path / "plain.trace", 0, {});
  REQUIRE(plain.steps.size() == 15);

  Backends late;
  const auto traced = record_to_file(spec, &late, dir.path / "late.trace", 0, {});
  require_same_records(traced, plain);
  REQUIRE(late.made.size() == 1);
  REQUIRE(late.made[0].made == 15);  // every step, through digest_when_done
  REQUIRE(late.made[0].undelivered == 0);
}

TEST_CASE("a pending step is written before resume points and before its trainer goes",
          "[record]") {
  const auto spec = late_spec();
  ra::test::TempDir dir;
  // Resume points as the run passes steps 4 and 7, and a stop after step 9 (mid-epoch 1) with a
  // new trainer from there.
  const auto plain = record_to_file(spec, nullptr, dir.path / "plain.trace", 9, {4, 7});
  Backends late;
  const auto traced = record_to_file(spec, &late, dir.path / "late.trace", 9, {4, 7});
  require_same_records(traced, plain);
  REQUIRE(late.made.size() == 2);
  REQUIRE(late.made[0].made == 9);
  REQUIRE(late.made[0].undelivered == 0);  // written before the trainer went
  REQUIRE(late.made[1].made == 6);
  REQUIRE(traced.resume_points.size() == 3);
  REQUIRE(traced.resume_points[0].step == 4);
  REQUIRE(traced.resume_points[1].step == 7);
  REQUIRE(traced.resume_points[2].step == 9);
  REQUIRE(traced.resume_points[2].resumed);
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(traced.resume_points[i].state.weights == plain.resume_points[i].state.weights);
  }
}

TEST_CASE("a backend that never stores the digests it was asked for fails the run", "[record]") {
  const auto spec = late_spec();
  ra::test::TempDir dir;
  Backends late;
  late.deliver = false;
  REQUIRE_THROWS_WITH(
      record_to_file(spec, &late, dir.path / "late.trace", 0, {}),
      Catch::Contains("the backend stored 0 of step 0's") && Catch::Contains("digest_when_done"));
}

TEST_CASE("a recorder gone with a step pending leaves its backend no dangling target", "[record]") {
  // An observer after the recorder fails the run at step 3: the recorder has step 3's digests
  // pending, and is destroyed with the run's failure, before its trainer and backend.
  class FailAt final : public ra::train::Observer {
    void on_step(const ra::train::Trainer&, const ra::train::StepEvent& e) override {
      if (e.step == 3) throw std::runtime_error("failed after step 3");
    }
  };
  const auto spec = late_spec();
  Backends late;
  ra::train::Trainer trainer(spec, ra::train::load_data(spec), options_for(&late));
  {
    ra::record::Recorder recorder(ra::trace::TraceHeader{}, 2);
    FailAt fail;
    ra::train::ObserverList observers;
    observers.add(&recorder);
    observers.add(&fail);
    REQUIRE_THROWS_WITH(trainer.run(&observers), "failed after step 3");
  }
  // The backend stores what it owes into memory it shares (ASan would see a write to the
  // recorder's freed step otherwise).
  trainer.settle_backend();
  REQUIRE(late.made.size() == 1);
  REQUIRE(late.made[0].made == 4);
}
