// The op recorder on a backend whose memory the host may not read (the CUDA backend's case, stood
// in for by host memory reported as device memory): it asks the backend for the digests of each
// op call's regions (Ops::digest_regions, hashed on the device by the CUDA backend) instead of
// downloading them, so op recording adds no download to the run, and its records are those of
// the same run recorded on the CPU, digest for digest.
#include <catch2/catch.hpp>

#include <atomic>
#include <nlohmann/json.hpp>
#include <utility>

#include "record/op_recorder.h"
#include "record/recorder.h"
#include "spec/parse.h"
#include "support/fake_device_memory.h"
#include "support/forwarding_ops.h"
#include "train/trainer.h"

namespace {

using CountingDeviceMemory = ra::test::FakeDeviceMemory;

// Hashes "device" memory where it is, as the CUDA backend does (the bytes are host memory here).
class HashingDeviceOps final : public ra::test::ForwardingOps {
 public:
  explicit HashingDeviceOps(CountingDeviceMemory& memory) : memory_(memory) {}
  ra::Memory& memory() override { return memory_; }
  std::vector<ra::Digest128> digest(const std::vector<const ra::Tensor*>& tensors) override {
    std::vector<ra::Digest128> out;
    for (const ra::Tensor* t : tensors) {
      out.push_back(ra::digest_bytes(ra::DType::f32, t->shape(), t->data(), t->bytes()));
    }
    return out;
  }
  // At once, as the default does: the forward to the CPU backend would download.
  void digest_when_done(const std::vector<const ra::Tensor*>& tensors,
                        std::shared_ptr<std::vector<ra::Digest128>> out) override {
    *out = digest(tensors);
  }
  std::vector<ra::Digest128> digest_regions(
      const std::vector<ra::backend::MemoryRegion>& regions) override {
    ++region_requests;
    std::vector<ra::Digest128> out;
    for (const auto& r : regions) {
      out.push_back(ra::digest_bytes(r.dtype, ra::Shape{r.count}, r.data,
                                     std::size_t(r.count) * ra::dtype_bytes(r.dtype)));
    }
    return out;
  }
  int region_requests = 0;
  // The queue of a backend whose calls return before their work is done (the CUDA backend's
  // DigestQueue), when `queues` is set: digests made as the queue call comes (in order with the
  // ops, as the stream orders them), handed over only at take.
  bool queues = false;
  bool queues_digests() const override { return queues; }
  std::size_t queue_digests(const std::vector<ra::backend::MemoryRegion>& regions) override {
    ++queue_calls;
    const std::size_t ticket = queued.size();
    for (const auto& r : regions) {
      queued.push_back(ra::digest_bytes(r.dtype, ra::Shape{r.count}, r.data,
                                        std::size_t(r.count) * ra::dtype_bytes(r.dtype)));
    }
    return ticket;
  }
  std::vector<ra::Digest128> take_queued_digests() override {
    ++takes;
    return std::exchange(queued, {});
  }
  std::vector<ra::Digest128> queued;
  int queue_calls = 0, takes = 0;

 private:
  CountingDeviceMemory& memory_;
};

ra::spec::ExperimentSpec device_spec() {
  return ra::spec::parse_spec(nlohmann::json::parse(R"({
    "seed": 8, "threads": 2,
    "data": {"train": {"format": "random", "samples": 32, "shape": [1, 10, 10], "classes": 3},
             "batch_size": 16},
    "model": {"input": [1, 10, 10], "layers": [
      {"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
      {"type": "maxpool2d", "pool": 2}, {"type": "flatten"},
      {"type": "dropout", "rate": 0.3}, {"type": "dense", "units": 3}]},
    "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
    "train": {"epochs": 1}})"),
                              ".");
}

struct Outcome {
  ra::trace::Trace trace;
  std::size_t downloads = 0;
  int region_requests = 0;
  int queue_calls = 0, takes = 0;
};

// One run, its ops recorded (or not) on the fake device or (device == false) the CPU; `queues`:
// the fake device queues digests.
Outcome run(bool device, bool record_ops, bool queues = false) {
  const auto s = device_spec();
  CountingDeviceMemory memory;
  HashingDeviceOps* fake = nullptr;
  ra::record::OpRecorder* ops = nullptr;
  ra::train::RunOptions options;
  options.threads = 2;
  if (device) {
    options.make_backend = [&](int) {
      auto b = std::make_unique<HashingDeviceOps>(memory);
      b->queues = queues;
      fake = b.get();
      return std::unique_ptr<ra::backend::Ops>(std::move(b));
    };
  } else {
    options.make_backend = [](int) { return std::make_unique<ra::test::ForwardingOps>(); };
  }
  if (record_ops) {
    options.wrap_backend = [&](ra::backend::Ops& backend) {
      auto recorder = std::make_unique<ra::record::OpRecorder>(backend, 2);
      ops = recorder.get();
      return std::unique_ptr<ra::backend::Ops>(std::move(recorder));
    };
  }
  ra::train::Trainer trainer(s, ra::train::load_data(s), options);
  ra::record::Recorder recorder(ra::trace::TraceHeader{}, 2);
  if (record_ops) recorder.record_ops(*ops, ra::trace::OpWindow{0, 2});
  const auto result = trainer.run(&recorder);
  Outcome o{recorder.finish(trainer, result), memory.downloads.load(), 0};
  if (fake != nullptr) {
    o.region_requests = fake->region_requests;
    o.queue_calls = fake->queue_calls;
    o.takes = fake->takes;
  }
  return o;
}

// The two recorded steps of `got` hold the records of `want`, op for op and digest for digest.
void check_same_records(const ra::trace::Trace& got, const ra::trace::Trace& want) {
  REQUIRE(got.steps.size() == 2);
  for (std::size_t s = 0; s < 2; ++s) {
    INFO("step " << s);
    const auto& w = want.steps[s].ops;
    const auto& g = got.steps[s].ops;
    REQUIRE(g.size() == w.size());
    REQUIRE(g.size() > 5);
    for (std::size_t i = 0; i < g.size(); ++i) {
      INFO(g[i].op << " " << g[i].layer);
      CHECK(g[i].op == w[i].op);
      CHECK(g[i].in == w[i].in);
      CHECK(g[i].out == w[i].out);
    }
  }
}

}  // namespace

TEST_CASE("op records on a device backend are hashed by the backend, not downloaded",
          "[audit][ops]") {
  const Outcome cpu = run(false, true);
  const Outcome device = run(true, true);
  const Outcome unrecorded = run(true, false);
  check_same_records(device.trace, cpu.trace);
  // Every recorded op call with a region in device memory asked the backend (the batch and the
  // loss value are on the host); recording the ops downloaded nothing the run did not.
  CHECK(device.region_requests > 0);
  CHECK(unrecorded.region_requests == 0);
  CHECK(device.downloads == unrecorded.downloads);
}

TEST_CASE("op records on a queueing device wait for the device once a step", "[audit][ops]") {
  const Outcome cpu = run(false, true);
  const Outcome queued = run(true, true, true);
  const Outcome unrecorded = run(true, false, true);
  check_same_records(queued.trace, cpu.trace);  // every placeholder resolved to its digest
  // Every device region went through the queue, taken once per recorded step (the window's two);
  // none was asked for on its own, and nothing was downloaded that the run did not.
  CHECK(queued.queue_calls > 0);
  CHECK(queued.takes == 2);
  CHECK(queued.region_requests == 0);
  CHECK(unrecorded.queue_calls == 0);
  CHECK(queued.downloads == unrecorded.downloads);
}
