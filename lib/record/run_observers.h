#pragma once
// Observers an audit attaches to each run besides the Recorder: snapshot writer and the test-only
// fault injector.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/directory.h"
#include "core/tensor_set_pool.h"
#include "core/writer_thread.h"
#include "record/run_options.h"
#include "train/trainer.h"

namespace ra::record {

// Writes weight snapshots (safetensors, PyTorch names and layouts) into one run's folder:
// weights-initial, weights-epoch-<e>, weights-step-<s>, weights-final; and batches.json.
// Written behind the run (SnapshotOptions::write_behind), a snapshot takes host copies of the
// weights on the training thread (into reused buffers of the backend's staging memory, with one
// wait for all the downloads), and a writer thread of its own (core/writer_thread.h) encodes
// and writes them while the run trains on, at most kSnapshotsPending at a time; a write's failure
// reaches the next snapshot taken, or finish(). Otherwise each is written when taken. finish()
// returns once every file is written, and throws what a write threw (a full disk:
// ra::RuntimeFailure naming the file).
class SnapshotWriter final : public train::Observer {
 public:
  SnapshotWriter(std::filesystem::path dir, SnapshotOptions options,
                 std::map<std::string, std::string> metadata);
  void on_start(const train::Trainer& t) override;
  void on_step(const train::Trainer& t, const train::StepEvent& e) override;
  void on_epoch(const train::Trainer& t, const train::EpochSummary& s) override;
  void finish(const train::Trainer& t);  // final weights and batches.json

  static std::filesystem::path file_for(const std::filesystem::path& dir, const std::string& point);

  // Snapshots copied and not yet written, at most: one written while one more waits. Taking a
  // third waits for the first to be written, so the copies held stay at two models' worth.
  static constexpr std::size_t kSnapshotsPending = 2;

 private:
  struct StagedWeights;
  struct Job;
  void write(const train::Trainer& t, const std::string& point);
  // The weights to write, as host tensors: copies in staging_ where they are on a device or
  // written behind the run (all downloaded with one wait), else the parameters themselves.
  StagedWeights stage(const train::Trainer& t, bool behind);
  bool write_behind(const train::Trainer& t) const;

  std::filesystem::path dir_;
  Directory folder_;  // dir_, opened once: every snapshot is written relative to it
  SnapshotOptions options_;
  std::map<std::string, std::string> metadata_;
  std::vector<std::vector<std::int64_t>> batches_;
  std::vector<std::int64_t> batch_epochs_;
  // Host copies of the weights, in the backend's staging memory (page-locked for CUDA), reused
  // from one snapshot to the next: at most kSnapshotsPending + 1 sets (the one being taken).
  std::optional<TensorSetPool> staging_;
  WriterThread writer_;  // last: its jobs use folder_, so it is joined before folder_ closes
};

class FaultInjector final : public train::Observer {
 public:
  explicit FaultInjector(FaultSpec fault) : fault_(std::move(fault)) {}
  void before_step(data::Batch& batch, std::int64_t step) override;
  bool after_update(nn::Model& model, std::int64_t step) override;

 private:
  FaultSpec fault_;
};

}  // namespace ra::record
