#include "audit/audit.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "audit/environment.h"
#include "audit/fault_check.h"
#include "audit/recorder.h"
#include "audit/run_observers.h"
#include "audit/safetensors.h"
#include "audit/trace_io.h"
#include "core/error.h"
#include "core/thread_start.h"
#include "spec/parse.h"
#include "train/observer_list.h"

namespace ra::audit {
namespace {

struct PlannedRun {
  int index = 0;
  std::string group;  // "same" or "different"
  train::RunSeeds seeds;
};

std::vector<PlannedRun> plan_runs(const spec::ExperimentSpec& spec, const AuditOptions& o) {
  std::vector<PlannedRun> runs;
  auto add = [&](const std::string& group) {
    PlannedRun r;
    r.index = static_cast<int>(runs.size());
    r.group = group;
    r.seeds = train::RunSeeds::all(spec.seed);
    if (group == "different") {
      const std::uint64_t s = derived_seed(spec.seed, r.index);
      if (o.vary.init) r.seeds.init = s;
      if (o.vary.data) r.seeds.data = s;
      if (o.vary.dropout) r.seeds.dropout = s;
    }
    runs.push_back(r);
  };
  if (o.seeds != SeedPolicy::different) {
    for (int i = 0; i < o.runs; ++i) add("same");
  }
  if (o.seeds != SeedPolicy::same) {
    for (int i = 0; i < o.runs; ++i) add("different");
  }
  return runs;
}

std::string run_name(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "run-%03d", index);
  return name;
}

nlohmann::json determinism_json(const spec::DeterminismSpec& d) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, mode] : d.ops) ops[spec::to_string(op)] = spec::to_string(mode);
  return {{"mode", spec::to_string(d.mode)}, {"ops", ops}};
}

// Loads snapshots written beside trace files: run i's folder is snapshot_dir_of(files[i]).
ComparisonOptions with_snapshots(ComparisonOptions options,
                                 std::vector<std::filesystem::path> trace_files) {
  options.load_snapshot = [files = std::move(trace_files)](
                              int run, const std::string& point,
                              std::vector<std::pair<std::string, Tensor>>& out) {
    const auto path = SnapshotWriter::file_for(snapshot_dir_of(files.at(run)), point);
    if (!std::filesystem::exists(path)) return false;
    out = read_safetensors(path).tensors;
    return true;
  };
  return options;
}

// The output folder of an audit, created up front. If the audit fails before writing anything
// into a folder it created (missing data, no usable GPU), the folder is removed again, so a failed
// command leaves nothing behind; a folder that existed, or holds files, is kept.
class OutputFolder {
 public:
  explicit OutputFolder(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    created_ = std::filesystem::create_directories(path, ec);
    if (ec) throw InputError("cannot create output folder " + path.string() + ": " + ec.message());
  }
  ~OutputFolder() {
    std::error_code ec;
    if (created_ && std::uncaught_exceptions() > exceptions_ &&
        std::filesystem::is_empty(path_, ec) && !ec) {
      std::filesystem::remove(path_, ec);
    }
  }
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

 private:
  std::filesystem::path path_;
  bool created_ = false;
  int exceptions_ = std::uncaught_exceptions();
};

}  // namespace

std::uint64_t derived_seed(std::uint64_t spec_seed, int run) {
  const std::string name = "run-seed/" + std::to_string(run);
  return XXH3_64bits_withSeed(name.data(), name.size(), spec_seed);
}

// parse_fault: audit/fault_check.cpp.

std::filesystem::path snapshot_dir_of(const std::filesystem::path& trace_file) {
  std::string name = trace_file.filename().string();
  const std::string suffix = ".trace.jsonl";
  if (name.size() > suffix.size() && name.ends_with(suffix))
    name.resize(name.size() - suffix.size());
  return trace_file.parent_path() / name;
}

std::vector<std::filesystem::path> trace_files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().ends_with(".trace.jsonl")) files.push_back(entry.path());
  }
  if (ec) throw InputError("cannot read folder " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no *.trace.jsonl files in " + dir.string());
  return files;
}

ComparisonResult compare_trace_files(const std::vector<std::filesystem::path>& files,
                                     const ComparisonOptions& options) {
  std::vector<Trace> traces;
  for (const auto& f : files) traces.push_back(read_trace(f));
  return compare_traces(traces, with_snapshots(options, files));
}

AuditResult run_audit(const spec::ExperimentSpec& spec, const AuditOptions& o,
                      const AuditProgress& progress) {
  if (o.runs < 1) throw InputError("--runs must be at least 1");
  const std::vector<PlannedRun> plan = plan_runs(spec, o);
  if (o.fault && (o.fault->run < 0 || o.fault->run >= static_cast<int>(plan.size()))) {
    throw InputError("--inject-fault: run " + std::to_string(o.fault->run) + " is not in 0.." +
                     std::to_string(plan.size() - 1));
  }
  const OutputFolder out_folder(o.out_dir);

  const nlohmann::json canonical = spec::to_json(spec);
  const std::string spec_text = canonical.dump();
  const std::string spec_digest =
      digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(spec_text.size())}, spec_text.data(),
                   spec_text.size())
          .hex();
  const train::LoadedData data = train::load_data(spec);
  if (o.fault) validate_fault(*o.fault, spec, *data.train);  // before any run: it must fire

  AuditResult result;
  result.trace_files.resize(plan.size());
  std::vector<Trace> traces(plan.size());
  std::mutex progress_mutex;
  train::RunOptions base_options;
  base_options.threads = o.threads;
  base_options.mode = o.mode;

  auto run_one = [&](const PlannedRun& p) {
    train::RunOptions run_options = base_options;
    run_options.seeds = p.seeds;
    train::Trainer trainer(spec, data, run_options);

    TraceHeader h;
    h.tool_version = o.tool_version;
    h.spec = canonical;
    h.spec_digest = spec_digest;
    h.run_index = p.index;
    h.seed_group = p.group;
    h.seed_init = p.seeds.init;
    h.seed_data = p.seeds.data;
    h.seed_dropout = p.seeds.dropout;
    h.backend = trainer.ops().name();
    h.threads = trainer.threads();
    h.determinism = determinism_json(trainer.determinism());
    h.environment = environment_fingerprint(trainer.threads(), trainer.ops().name());
    if (const nlohmann::json gpu = trainer.ops().device_fingerprint(); !gpu.is_null()) {
      h.environment["gpu"] = gpu;
    }
    const bool faulty = o.fault && o.fault->run == p.index;
    if (faulty) {
      h.fault = {{"run", o.fault->run},
                 {"step", o.fault->step},
                 {"tensor", o.fault->tensor},
                 {"element", o.fault->element},
                 {"bit", o.fault->bit}};
    }

    const std::filesystem::path trace_file = o.out_dir / (run_name(p.index) + ".trace.jsonl");
    Recorder recorder(h, trainer.threads());
    SnapshotWriter snapshots(snapshot_dir_of(trace_file), o.snapshots,
                             {{"run", std::to_string(p.index)}, {"spec_digest", spec_digest}});
    std::optional<FaultInjector> injector;
    if (faulty) injector.emplace(*o.fault);

    struct ProgressRelay final : train::Observer {
      const AuditProgress* progress;
      std::mutex* mutex;
      int run;
      std::int64_t total;
      void on_step(const train::Trainer&, const train::StepEvent& e) override {
        if (!progress->step) return;
        std::lock_guard lock(*mutex);
        progress->step(run, e, total);
      }
    } relay;
    relay.progress = &progress;
    relay.mutex = &progress_mutex;
    relay.run = p.index;
    relay.total = train::planned_steps(spec, *data.train);

    train::ObserverList observers;
    if (injector) observers.add(&*injector);
    observers.add(&recorder);
    observers.add(&snapshots);
    observers.add(&relay);
    if (progress.run_started) {
      std::lock_guard lock(progress_mutex);
      progress.run_started(p.index, static_cast<int>(plan.size()));
    }
    const train::TrainResult r = trainer.run(&observers);
    snapshots.finish(trainer);
    Trace trace = recorder.finish(trainer, r);
    write_trace(trace_file, trace);
    trace.source = trace_file.string();
    traces[p.index] = std::move(trace);
    result.trace_files[p.index] = trace_file;
    if (progress.run_finished) {
      std::lock_guard lock(progress_mutex);
      progress.run_finished(p.index, trace_file);
    }
  };

  const int jobs = std::clamp(o.jobs, 1, static_cast<int>(plan.size()));
  if (jobs == 1) {
    for (const PlannedRun& p : plan) run_one(p);
  } else {
    // K runs at once; the first failure stops handing out new runs and is rethrown.
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    std::vector<std::thread> workers;
    // A job thread the system refuses (core/thread_start.h) stops the audit like a failed run:
    // the jobs already started see the error, finish their run and are joined.
    const auto start_job = [&](int j, std::function<void()> body) {
      try {
        workers.push_back(start_thread(
            "audit job " + std::to_string(j + 1) + " of " + std::to_string(jobs), std::move(body)));
        return true;
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        return false;
      }
    };
    for (int j = 0; j < jobs; ++j) {
      const bool started = start_job(j, [&] {
        for (;;) {
          {
            std::lock_guard lock(error_mutex);
            if (error) return;
          }
          const std::size_t i = next.fetch_add(1);
          if (i >= plan.size()) return;
          try {
            run_one(plan[i]);
          } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
          }
        }
      });
      if (!started) break;
    }
    for (std::thread& t : workers) t.join();
    if (error) std::rethrow_exception(error);
  }

  ComparisonOptions compare_options;
  compare_options.expect_identical = o.expect_identical;  // default: from the traces' policy
  compare_options.loss_tolerance = o.loss_tolerance;
  result.comparison = compare_traces(traces, with_snapshots(compare_options, result.trace_files));
  return result;
}

}  // namespace ra::audit
