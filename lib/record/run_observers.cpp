#include "record/run_observers.h"

#include <bit>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "formats/safetensors.h"

namespace ra::record {

namespace {

// The run's snapshot folder, created in the audit folder, never through a link (core/directory.h).
Directory snapshot_folder(const std::filesystem::path& dir) {
  return *Directory::open(dir.parent_path()).subfolder(dir.filename().string(), true);
}

std::string writer_name(const std::map<std::string, std::string>& metadata) {
  const auto run = metadata.find("run");
  return run == metadata.end() ? "snapshot writer" : "snapshot writer of run " + run->second;
}

}  // namespace

// A snapshot's weights as host tensors, by name: the parameters themselves where they are host
// tensors and the file is written at once; else copies, in a set of the staging pool.
struct SnapshotWriter::StagedWeights {
  std::vector<std::string> names;
  std::vector<const Tensor*> tensors;
  std::shared_ptr<TensorSetPool::Set> copies;  // what `tensors` points to, when copied
};

// A snapshot to write: written at once, or handed to the writer thread.
struct SnapshotWriter::Job {
  std::string file;
  StagedWeights weights;
  std::map<std::string, std::string> metadata;

  void write(const Directory& folder) const {
    std::vector<formats::NamedTensor> tensors;
    tensors.reserve(weights.names.size());
    for (std::size_t i = 0; i < weights.names.size(); ++i) {
      tensors.push_back({weights.names[i], weights.tensors[i]});
    }
    write_file_atomic(folder, file, formats::encode_safetensors(tensors, metadata));
  }
};

SnapshotWriter::SnapshotWriter(std::filesystem::path dir, SnapshotOptions options,
                               std::map<std::string, std::string> metadata)
    : dir_(std::move(dir)),
      folder_(snapshot_folder(dir_)),
      options_(options),
      metadata_(std::move(metadata)),
      writer_(writer_name(metadata_), kSnapshotsPending) {}

std::filesystem::path SnapshotWriter::file_for(const std::filesystem::path& dir,
                                               const std::string& point) {
  return dir / ("weights-" + point + ".safetensors");
}

void SnapshotWriter::write(const train::Trainer& t, const std::string& point) {
  const bool behind = write_behind(t);
  auto job = std::make_shared<Job>();
  job->file = file_for(dir_, point).filename().string();
  job->metadata = metadata_;
  job->metadata["point"] = point;
  job->weights = stage(t, behind);
  if (!behind) {
    job->write(folder_);
    return;
  }
  // The job owns the copies: the set returns to the pool when the writer thread is done with it.
  writer_.submit([this, job] { job->write(folder_); });
}

SnapshotWriter::StagedWeights SnapshotWriter::stage(const train::Trainer& t, bool behind) {
  const std::vector<nn::Param*>& params = t.model().params();
  StagedWeights w;
  // Behind the run every tensor is copied: from its next step on, the trainer changes the
  // weights in place while the writer thread encodes these.
  bool copy = behind;
  std::vector<Shape> shapes;
  for (const nn::Param* p : params) {
    w.names.push_back(p->name);
    shapes.push_back(p->value.shape());
    copy = copy || !p->value.on_host();
  }
  if (!copy) {
    for (const nn::Param* p : params) w.tensors.push_back(&p->value);
    return w;
  }
  if (!staging_) staging_.emplace(t.ops().staging_memory());
  w.copies = staging_->acquire(shapes);
  // The downloads from each memory in one call (all from the backend's): one wait per snapshot.
  std::vector<Download> downloads;
  Memory* from = nullptr;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& value = params[i]->value;
    if (from != nullptr && &value.memory() != from) {
      from->download_all(downloads);
      downloads.clear();
    }
    from = &value.memory();
    Tensor& copy_of = (*w.copies)[i];
    downloads.push_back({copy_of.data(), value.data(), value.bytes()});
    w.tensors.push_back(&copy_of);
  }
  if (from != nullptr) from->download_all(downloads);
  return w;
}

bool SnapshotWriter::write_behind(const train::Trainer& t) const {
  if (options_.write_behind) return *options_.write_behind;
  const auto& params = t.model().params();
  return !params.empty() && !params.front()->value.on_host();
}

void SnapshotWriter::on_start(const train::Trainer& t) {
  if (t.position().step > 0) return;  // a resumed run's restored trainer: "initial" is written
  write(t, "initial");
}

void SnapshotWriter::on_step(const train::Trainer& t, const train::StepEvent& e) {
  if (options_.batches) {
    batches_.push_back(e.batch->sample_indices);
    batch_epochs_.push_back(e.epoch);
  }
  if (options_.every_steps > 0 && (e.step + 1) % options_.every_steps == 0) {
    write(t, "step-" + std::to_string(e.step));
  }
}

void SnapshotWriter::on_epoch(const train::Trainer& t, const train::EpochSummary& s) {
  if (options_.epochs) write(t, "epoch-" + std::to_string(s.epoch));
}

void SnapshotWriter::finish(const train::Trainer& t) {
  write(t, "final");
  if (options_.batches) {
    nlohmann::json steps = nlohmann::json::array();
    for (std::size_t i = 0; i < batches_.size(); ++i) {
      steps.push_back({{"step", i}, {"epoch", batch_epochs_[i]}, {"indices", batches_[i]}});
    }
    nlohmann::json batches = {{"steps", steps}};
    // Tagged like the safetensors files (their metadata), so a stale file is recognisable.
    for (const char* key : {"audit_id", "run"}) {
      if (const auto it = metadata_.find(key); it != metadata_.end()) batches[key] = it->second;
    }
    write_file_atomic(folder_, "batches.json", batches.dump() + "\n");
  }
  writer_.finish();
}

void FaultInjector::before_step(data::Batch& batch, std::int64_t step) {
  if (step != fault_.step || fault_.tensor != "batch") return;  // (op faults: OpRecorder)
  if (batch.size() < 2)
    throw InputError("fault injection: batch of step " + std::to_string(step) +
                     " has fewer than 2 samples");
  // Swap samples 0 and 1: the same samples in another order, as a perturbed loader would do.
  const std::int64_t per_sample = static_cast<std::int64_t>(batch.images.size()) / batch.size();
  std::swap_ranges(batch.images.data(), batch.images.data() + per_sample,
                   batch.images.data() + per_sample);
  std::swap(batch.labels[0], batch.labels[1]);
  std::swap(batch.sample_indices[0], batch.sample_indices[1]);
}

bool FaultInjector::after_update(nn::Model& model, std::int64_t step) {
  if (step != fault_.step || fault_.tensor == "batch" || !fault_.op.empty()) return false;
  for (nn::Param* p : model.params()) {
    if (p->name != fault_.tensor) continue;
    if (fault_.element < 0 || fault_.element >= static_cast<std::int64_t>(p->value.size())) {
      throw InputError("fault injection: element " + std::to_string(fault_.element) +
                       " is outside " + p->name + " (" + std::to_string(p->value.size()) +
                       " elements)");
    }
    Tensor host = p->value.to_host();
    float& v = host[fault_.element];
    v = std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) ^ (1u << fault_.bit));
    p->value.copy_from(host);
    return true;
  }
  throw InputError("fault injection: no parameter named '" + fault_.tensor + "'");
}

}  // namespace ra::record
