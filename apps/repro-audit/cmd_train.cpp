// `repro-audit train SPEC`: one training run. Progress on stderr; on stdout one line per epoch and
// a final line carrying the final loss with its exact float bits, so that
//   for i in $(seq 10); do repro-audit train spec.json | tail -n 1; done | sort | uniq -c
// compares runs exactly. --json prints one JSON document instead.
#include <spdlog/spdlog.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "cuda_graphs_option.h"
#include "json_output.h"
#include "nn/model_digest.h"
#include "option_checks.h"
#include "spec/parse.h"
#include "spec_overrides.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace ra::app {
namespace {

struct TrainOptions {
  std::string spec_path;
  std::optional<int> threads;
  std::string mode;  // "" = the spec's policy
  std::optional<std::uint64_t> seed;
  std::string device;         // "" = the spec's
  std::optional<int> epochs;  // the spec's train.epochs unless given
  bool json = false;
  std::optional<std::int64_t> interrupt_at;
  std::string checkpoint_dir = ".";
  std::string resume_from;
  bool cuda_graphs = false;
};

std::string float_bits_hex(float v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", std::bit_cast<std::uint32_t>(v));
  return text;
}

// Progress lines on stderr, at most one every two seconds (plus the first step).
class ProgressLogger final : public train::Observer {
 public:
  explicit ProgressLogger(std::int64_t total_steps) : total_(total_steps) {}
  void on_step(const train::Trainer&, const train::StepEvent& e) override {
    const auto now = std::chrono::steady_clock::now();
    if (e.step == 0 || now - last_ >= std::chrono::seconds(2)) {
      last_ = now;
      spdlog::info("epoch {} step {}/{} loss {:.6f} ({:.1f} ms/step)", e.epoch + 1, e.step + 1,
                   total_, e.loss, e.seconds * 1e3);
    }
  }
  void on_epoch(const train::Trainer& t, const train::EpochSummary& s) override {
    if (json_) return;
    std::printf("epoch %lld/%d steps=%lld train_loss=%.6f", static_cast<long long>(s.epoch + 1),
                t.spec().train.epochs, static_cast<long long>(s.steps), s.mean_train_loss);
    if (s.eval_loss)
      std::printf(" eval_loss=%.6f eval_accuracy=%.4f", *s.eval_loss, *s.eval_accuracy);
    std::printf(" seconds=%.2f\n", s.seconds);
    std::fflush(stdout);
  }
  bool json_ = false;

 private:
  std::int64_t total_;
  std::chrono::steady_clock::time_point last_{};
};

// The run stopped at --interrupt-at: its checkpoint, and one line (or JSON document) naming it.
int write_interrupt_checkpoint(const TrainOptions& o, const train::Trainer& trainer,
                               const train::TrainResult& r) {
  const train::CheckpointFiles files = train::write_checkpoint(
      train::checkpoint_stem(o.checkpoint_dir, r.position.step), trainer.checkpoint(r.position));
  if (o.json) {
    std::printf("%s\n", json_text(nlohmann::json{{"interrupted", true},
                                                 {"steps", r.steps},
                                                 {"checkpoint", files.manifest.string()},
                                                 {"checkpoint_bytes", files.bytes}})
                            .c_str());
  } else {
    std::printf("interrupted steps=%lld checkpoint=%s\n", static_cast<long long>(r.steps),
                files.manifest.string().c_str());
  }
  return 0;
}

// train --json's document: the run, its epochs, and (--cuda-graphs on) how its steps launched.
nlohmann::json train_summary(const TrainOptions& o, const spec::ExperimentSpec& s,
                             const train::Trainer& trainer, const train::TrainResult& r,
                             const std::string& weights) {
  const auto& last = r.epochs.back();
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : r.epochs) {
    nlohmann::json je = {{"epoch", e.epoch + 1},
                         {"steps", e.steps},
                         {"train_loss", e.mean_train_loss},
                         {"seconds", e.seconds}};
    if (e.eval_loss) {
      je["eval_loss"] = *e.eval_loss;
      je["eval_accuracy"] = *e.eval_accuracy;
    }
    epochs.push_back(je);
  }
  nlohmann::json doc = {{"name", s.name},
                        {"seed", s.seed},
                        {"backend", trainer.ops().name()},
                        {"threads", trainer.threads()},
                        {"mode", spec::to_string(trainer.determinism().mode)},
                        {"steps", r.steps},
                        {"final_loss", r.final_loss},
                        {"final_loss_bits", float_bits_hex(r.final_loss)},
                        {"weights_xxh3", weights},
                        {"median_step_ms", r.median_step_seconds * 1e3},
                        {"seconds", r.total_seconds},
                        {"epochs", epochs}};
  if (o.cuda_graphs) {
    doc["step_launch"] = step_launch_json(r.step_launches);
  }
  if (last.eval_accuracy) {
    doc["eval_loss"] = *last.eval_loss;
    doc["eval_accuracy"] = *last.eval_accuracy;
  }
  return doc;
}

int run_train(const TrainOptions& o) {
  spec::ExperimentSpec s = spec::load_spec(o.spec_path);
  if (o.seed) s.seed = *o.seed;
  if (!o.device.empty()) s.device = *spec::device_from_string(o.device);
  override_epochs(s, o.epochs);
  train::RunOptions options;
  options.threads = o.threads;
  if (!o.mode.empty()) options.mode = spec::kernel_mode_from_string(o.mode);

  options.interrupt_at = o.interrupt_at;
  options.step_graphs = o.cuda_graphs;
  std::optional<train::Checkpoint> checkpoint;
  if (!o.resume_from.empty()) {
    checkpoint = train::read_checkpoint(o.resume_from);
    options.seeds = checkpoint->seeds;  // its streams' keys: the seeds it was trained with
  }
  spdlog::info("loading data for {}", s.name);
  train::LoadedData data = train::load_data(s);
  if (o.interrupt_at &&
      (*o.interrupt_at < 1 || *o.interrupt_at >= train::planned_steps(s, *data.train))) {
    throw InputError("--interrupt-at " + std::to_string(*o.interrupt_at) + ": a run of " +
                     std::to_string(train::planned_steps(s, *data.train)) +
                     " steps can stop after step 1 to its last but one");
  }
  train::Trainer trainer(s, data, options);
  if (checkpoint) {
    trainer.restore(*checkpoint, {});
    spdlog::info("resumed from {} after step {}", o.resume_from, checkpoint->position.step);
  }
  if (!trainer.backend_notice().empty()) spdlog::warn("{}", trainer.backend_notice());
  const std::int64_t total = train::planned_steps(s, *data.train);
  spdlog::info("training {} on {} with {} thread(s), {} mode, {} steps", s.name,
               trainer.ops().name(), trainer.threads(), spec::to_string(trainer.determinism().mode),
               total);

  ProgressLogger progress(total);
  progress.json_ = o.json;
  const train::TrainResult r = trainer.run(&progress);
  if (r.interrupted) return write_interrupt_checkpoint(o, trainer, r);
  const std::string weights = nn::parameters_digest(trainer.model()).hex();
  const auto& last = r.epochs.back();
  const backend::StepLaunchCounts& launches = r.step_launches;
  if (o.cuda_graphs) {
    spdlog::info("steps launched: {} eager, {} captured, {} replayed", launches.eager,
                 launches.capture, launches.replay);
    for (const auto& [reason, count] : launches.eager_reasons) {
      spdlog::info("  {} eager: {}", count, reason);
    }
  }

  if (o.json) {
    std::printf("%s\n", json_text(train_summary(o, s, trainer, r, weights)).c_str());
    return 0;
  }
  // The final line: stable format, documented in the README. %.9g round-trips a float.
  std::printf("final loss=%.9g loss_bits=%s", r.final_loss, float_bits_hex(r.final_loss).c_str());
  if (last.eval_accuracy) std::printf(" eval_accuracy=%.4f", *last.eval_accuracy);
  std::printf(" steps=%lld weights_xxh3=%s\n", static_cast<long long>(r.steps), weights.c_str());
  return 0;
}

}  // namespace

void register_train(CLI::App& app, CommandRun& run) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train one run of a spec and print its final loss");
  cmd->add_option("spec", o->spec_path, "Experiment spec (JSON)")->required();
  cmd->add_option("--threads", o->threads, "Worker threads (overrides the spec; 0 = all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--mode", o->mode, "Kernel mode for every reducing op (overrides the spec)")
      ->check(CLI::IsMember({"deterministic", "nondeterministic", "autotune", "batch_invariant"}));
  cmd->add_option("--seed", o->seed, "Seed (overrides the spec), 0..2^64-1")
      ->check(unsigned_integer());
  cmd->add_option("--device", o->device,
                  "auto: the GPU when usable, else the CPU; cuda: the GPU or exit 3; cpu "
                  "(overrides the spec)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  add_epochs_option(*cmd, o->epochs);
  cmd->add_flag("--json", o->json, "Print one JSON summary (and nothing else) on stdout");
  cmd->add_option("--interrupt-at", o->interrupt_at,
                  "Stop after step STEP and write a full checkpoint (docs/resume.md) into "
                  "--checkpoint-dir as checkpoint-step-STEP.json and .safetensors");
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir, "Folder for --interrupt-at's checkpoint")
      ->capture_default_str();
  cmd->add_option("--resume-from", o->resume_from,
                  "Go on from a checkpoint (its .json manifest) written by --interrupt-at or an "
                  "audit's run folder: the same run, as if it had never stopped")
      ->excludes("--seed");
  add_cuda_graphs_option(*cmd, o->cuda_graphs);
  cmd->callback([&run, o] { run = [o] { return run_train(*o); }; });
}

}  // namespace ra::app
