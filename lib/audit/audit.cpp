#include "audit/audit.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "audit/audit_folder.h"
#include "audit/environment.h"
#include "audit/fault_check.h"
#include "audit/recorder.h"
#include "audit/run_observers.h"
#include "audit/safetensors.h"
#include "audit/trace_io.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "core/thread_start.h"
#include "spec/parse.h"
#include "train/backend_choice.h"
#include "train/observer_list.h"

namespace ra::audit {
namespace {

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

nlohmann::json determinism_json(const spec::DeterminismSpec& d) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, mode] : d.ops) ops[spec::to_string(op)] = spec::to_string(mode);
  return {{"mode", spec::to_string(d.mode)}, {"ops", ops}};
}

nlohmann::json fault_json(const std::optional<FaultSpec>& f) {
  if (!f) return nullptr;
  return {{"run", f->run},
          {"step", f->step},
          {"tensor", f->tensor},
          {"element", f->element},
          {"bit", f->bit}};
}

// Loads the snapshots beside compared traces: run i's folder is snapshot_dir_of(its source), and
// a snapshot counts only when it carries the trace's audit id (both empty for older files): a
// stale file of another audit in the same folder is never measured, and is named in `ignored`.
ComparisonOptions with_snapshots(ComparisonOptions options, const std::vector<Trace>& traces,
                                 std::shared_ptr<std::set<std::string>> ignored) {
  struct Source {
    std::filesystem::path dir;
    std::string audit_id;
  };
  std::vector<Source> sources;
  for (const Trace& t : traces) sources.push_back({snapshot_dir_of(t.source), t.header.audit_id});
  options.load_snapshot = [sources = std::move(sources), ignored = std::move(ignored)](
                              int run, const std::string& point,
                              std::vector<std::pair<std::string, Tensor>>& out) {
    const Source& source = sources.at(static_cast<std::size_t>(run));
    const auto path = SnapshotWriter::file_for(source.dir, point);
    if (!std::filesystem::exists(path)) return false;
    SafetensorsFile file = read_safetensors(path);
    const auto id = file.metadata.find("audit_id");
    const std::string snapshot_audit = id == file.metadata.end() ? "" : id->second;
    if (snapshot_audit != source.audit_id) {
      ignored->insert(
          path.string() + ": " +
          (snapshot_audit.empty() ? "has no audit id" : "belongs to audit " + snapshot_audit) +
          ", its trace to " + (source.audit_id.empty() ? "none" : "audit " + source.audit_id));
      return false;
    }
    out = std::move(file.tensors);
    return true;
  };
  return options;
}

ComparisonResult compare_with_snapshots(const std::vector<Trace>& traces,
                                        const ComparisonOptions& options,
                                        std::vector<AuditFolderCheck> folders) {
  auto ignored = std::make_shared<std::set<std::string>>();
  ComparisonResult result = compare_traces(traces, with_snapshots(options, traces, ignored));
  result.audit_folders = std::move(folders);
  result.ignored_snapshots.assign(ignored->begin(), ignored->end());
  return result;
}

std::string run_list(const std::vector<int>& runs) {
  std::string out;
  for (int r : runs) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string file_list(const std::vector<std::string>& files, std::size_t max_items = 6) {
  std::string out;
  for (std::size_t i = 0; i < files.size() && i < max_items; ++i) {
    out += (i == 0 ? "" : ", ") + files[i];
  }
  if (files.size() > max_items) out += " and " + std::to_string(files.size() - max_items) + " more";
  return out;
}

// The manifest's runs with a whole trace of its audit, read from the folder (InputError when
// there are none: nothing to compare).
std::vector<Trace> whole_runs(const std::filesystem::path& dir, ManifestRuns& runs) {
  std::vector<Trace> traces;
  for (auto& t : runs.traces) {
    if (t) traces.push_back(std::move(*t));
  }
  if (traces.empty()) {
    std::string why;
    for (const MissingRun& m : runs.check.missing_runs) {
      why += "\n  run " + std::to_string(m.run) + ": " + m.reason;
    }
    throw InputError(dir.string() + ": none of the " + std::to_string(runs.check.planned_runs) +
                     " runs of audit " + runs.check.audit_id + " has a whole trace:" + why);
  }
  return traces;
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

// The audit as this call would start it: everything that decides the bits of its runs (a resumed
// audit must match it field for field). Id and creation time are left to the caller.
AuditManifest requested_manifest(const spec::ExperimentSpec& spec, const AuditOptions& o,
                                 const std::vector<PlannedRun>& plan) {
  AuditManifest m;
  m.tool_version = o.tool_version;
  m.spec = spec::to_json(spec);
  m.spec_digest = spec_digest_of(m.spec).hex();  // as the trace header's
  m.device = spec::to_string(spec.device);
  // What the device resolves to here (a CPU run and a GPU run of one audit would differ).
  m.backend = spec.device == spec::Device::cpu || !train::fallback_notice(spec.device).empty()
                  ? "cpu"
                  : "cuda";
  m.threads = o.threads.value_or(spec.threads);
  if (m.threads <= 0) m.threads = hardware_threads();
  m.determinism = determinism_json(o.mode ? spec::DeterminismSpec{*o.mode, {}} : spec.determinism);
  m.seed_policy = o.seeds == SeedPolicy::same        ? "same"
                  : o.seeds == SeedPolicy::different ? "different"
                                                     : "both";
  m.snapshots = {{"epochs", o.snapshots.epochs},
                 {"every_steps", o.snapshots.every_steps},
                 {"batches", o.snapshots.batches}};
  m.fault = fault_json(o.fault);
  m.runs = plan;
  return m;
}

// The report file's name when it lies in the audit folder (else none).
std::optional<std::string> report_in_folder(const std::filesystem::path& report,
                                            const std::filesystem::path& dir) {
  if (report.empty() || report == "-") return std::nullopt;
  std::error_code ec;
  const auto parent = std::filesystem::weakly_canonical(std::filesystem::absolute(report, ec), ec);
  const auto folder = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec || parent.parent_path() != folder) return std::nullopt;
  return parent.filename().string();
}

std::string describe(const AuditManifest& m) {
  return "audit " + m.audit_id + " of spec '" + m.spec.value("name", "") + "', " +
         std::to_string(m.runs.size()) + " run(s), created " + m.created;
}

// What an audit call does with its folder, decided with the folder locked.
struct FolderPlan {
  AuditManifest manifest;
  std::vector<int> to_train;  // run indices, in order
  bool new_audit = true;      // false: resuming the folder's audit
};

class AuditFolderSetup {
 public:
  AuditFolderSetup(const std::filesystem::path& dir, const AuditOptions& o, AuditManifest requested,
                   const AuditProgress& progress)
      : dir_(dir), o_(o), requested_(std::move(requested)), progress_(progress) {}

  // Looks at the folder and decides (refusing what it must); changes nothing yet.
  void inspect() {
    contents_ = scan_audit_folder(dir_);
    if (contents_.has_manifest) {
      try {
        existing_ = read_manifest(dir_);
        contents_ = scan_audit_folder(dir_, existing_->report_files);
      } catch (const InputError& e) {
        manifest_error_ = e.what();
      }
    }
    switch (o_.folder_use) {
      case FolderUse::fresh:
        if (contents_.holds_audit() || !contents_.unrecognised.empty()) refuse_occupied();
        break;
      case FolderUse::overwrite:
        break;
      case FolderUse::resume:
        if (!contents_.has_manifest && contents_.holds_audit()) {
          throw InputError("cannot resume the audit in " + dir_.string() +
                           ": it has no audit.json (an audit from before manifests, or one killed "
                           "before it began) holding " +
                           file_list(contents_.own) +
                           "; use --overwrite to start over, or give another --out");
        }
        if (!manifest_error_.empty()) {
          throw InputError("cannot resume the audit in " + dir_.string() + ": " + manifest_error_ +
                           "; use --overwrite to start over, or give another --out");
        }
        if (existing_) check_same_audit();
        break;
    }
  }

  // Makes the folder ready: removes what must go and writes the manifest of a new audit.
  FolderPlan apply() {
    FolderPlan plan;
    if (o_.folder_use == FolderUse::resume && existing_) {
      plan = resume_plan();
    } else {
      if (o_.folder_use == FolderUse::overwrite) {
        clear_own_files();
      } else if (o_.folder_use == FolderUse::resume) {
        notice("nothing to resume in " + dir_.string() + ": starting the audit");
      }
      remove_debris(dir_, contents_);
      plan.manifest = requested_;
      plan.manifest.audit_id = new_audit_id();
      plan.manifest.created = utc_now();
      for (const PlannedRun& p : plan.manifest.runs) plan.to_train.push_back(p.index);
    }
    if (const auto report = report_in_folder(o_.report_file, dir_)) {
      auto& reports = plan.manifest.report_files;
      if (std::find(reports.begin(), reports.end(), *report) == reports.end())
        reports.push_back(*report);
    }
    write_manifest(dir_, plan.manifest);
    return plan;
  }

 private:
  void notice(const std::string& message) const {
    if (progress_.notice) progress_.notice(message);
  }

  [[noreturn]] void refuse_occupied() const {
    std::string what;
    if (existing_) {
      what = "holds another audit (" + describe(*existing_) + ")";
    } else if (contents_.has_manifest) {
      what = "holds an audit whose manifest cannot be read (" + manifest_error_ + ")";
    } else if (contents_.holds_audit()) {
      what = "holds an earlier audit without a manifest (" + file_list(contents_.own) + ")";
    } else {
      what =
          "holds run files repro-audit did not write (" + file_list(contents_.unrecognised) + ")";
    }
    throw InputError(
        "output folder " + dir_.string() + " " + what +
        ": an audit folder holds one audit. Use --resume to finish the audit there, --overwrite "
        "to replace it (removes only repro-audit's own files), or give another --out");
  }

  void check_same_audit() const {
    const std::vector<std::string> differences = manifest_differences(*existing_, requested_);
    if (differences.empty()) return;
    std::string lines;
    for (const std::string& d : differences) lines += "\n  " + d;
    throw InputError("cannot resume the audit in " + dir_.string() + " (" + describe(*existing_) +
                     "): it is not the audit requested:" + lines +
                     "\nresume with the spec and options it was started with, use --overwrite to "
                     "replace it, or give another --out");
  }

  void clear_own_files() {
    const std::vector<std::string> left = remove_own_files(dir_, contents_);
    if (!contents_.own.empty() || !contents_.debris.empty()) {
      notice("--overwrite: removed " +
             std::to_string(contents_.own.size() + contents_.debris.size()) +
             " file(s) of the earlier audit in " + dir_.string());
    }
    if (!left.empty()) {
      notice("--overwrite: left in place, not repro-audit's: " + file_list(left, 10));
    }
    contents_ = scan_audit_folder(dir_);
  }

  FolderPlan resume_plan() {
    FolderPlan plan;
    plan.new_audit = false;
    plan.manifest = *existing_;
    ManifestRuns runs = read_manifest_runs(dir_, plan.manifest, DamagedTrace::retrain);
    for (const MissingRun& m : runs.check.missing_runs) plan.to_train.push_back(m.run);
    // What killed attempts left: temporaries of atomic writes and the runs' partial snapshots.
    remove_debris(dir_, contents_);
    for (int run : plan.to_train) remove_run_snapshots(dir_, run);
    notice("resuming " + describe(plan.manifest) + " in " + dir_.string() + ": " +
           (plan.to_train.empty() ? std::string("every run is whole, nothing to train")
                                  : "training run(s) " + run_list(plan.to_train)) +
           (runs.check.runs.empty() ? "" : "; whole: run(s) " + run_list(runs.check.runs)));
    for (const ForeignFile& f : runs.check.foreign_files) {
      notice("not of this audit, left in place unless retrained: " + f.file + " (" + f.reason +
             ")");
    }
    return plan;
  }

  std::filesystem::path dir_;
  const AuditOptions& o_;
  AuditManifest requested_;
  const AuditProgress& progress_;
  FolderContents contents_;
  std::optional<AuditManifest> existing_;
  std::string manifest_error_;
};

// A new audit that fails before anything of its runs reached the folder (no usable GPU, a bad
// fault injection at step 0) takes its manifest back, so the folder is as it was.
class NewManifestGuard {
 public:
  NewManifestGuard(std::filesystem::path dir, bool armed) : dir_(std::move(dir)), armed_(armed) {}
  NewManifestGuard(const NewManifestGuard&) = delete;
  NewManifestGuard& operator=(const NewManifestGuard&) = delete;
  ~NewManifestGuard() {
    if (!armed_ || std::uncaught_exceptions() <= exceptions_) return;
    try {
      const FolderContents c = scan_audit_folder(dir_);
      if (c.trace_runs.empty() && c.snapshot_runs.empty()) {
        std::error_code ec;
        std::filesystem::remove(dir_ / kManifestName, ec);
      }
    } catch (...) {  // a destructor during unwinding must not throw; the manifest then stays
    }
  }

 private:
  std::filesystem::path dir_;
  bool armed_;
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
  return compare_with_snapshots(traces, options, {});
}

ComparisonResult compare_inputs(const std::vector<std::filesystem::path>& inputs,
                                const ComparisonOptions& options) {
  std::vector<Trace> traces;
  std::vector<AuditFolderCheck> folders;
  for (const std::filesystem::path& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      traces.push_back(read_trace(input));
      continue;
    }
    std::vector<Trace> found;
    if (std::filesystem::exists(input / kManifestName, ec)) {
      ManifestRuns runs = read_manifest_runs(input, read_manifest(input), DamagedTrace::reject);
      found = whole_runs(input, runs);
      folders.push_back(std::move(runs.check));
    } else {
      UnvouchedTraces unvouched = traces_without_manifest(input);
      found = std::move(unvouched.traces);
      folders.push_back(std::move(unvouched.check));
    }
    for (Trace& t : found) traces.push_back(std::move(t));
  }
  return compare_with_snapshots(traces, options, std::move(folders));
}

AuditResult run_audit(const spec::ExperimentSpec& spec, const AuditOptions& o,
                      const AuditProgress& progress) {
  if (o.runs < 1) throw InputError("--runs must be at least 1");
  const std::vector<PlannedRun> plan = plan_runs(spec, o);
  if (o.fault && (o.fault->run < 0 || o.fault->run >= static_cast<int>(plan.size()))) {
    throw InputError("--inject-fault: run " + std::to_string(o.fault->run) + " is not in 0.." +
                     std::to_string(plan.size() - 1));
  }

  // The folder: locked before it is looked at (a second audit fails here, at once), refused or
  // prepared before the data is loaded, its manifest written before the first run trains.
  const OutputFolder out_folder(o.out_dir);
  const FolderLock folder_lock(o.out_dir);
  AuditFolderSetup setup(o.out_dir, o, requested_manifest(spec, o, plan), progress);
  setup.inspect();
  const train::LoadedData data = train::load_data(spec);
  if (o.fault) validate_fault(*o.fault, spec, *data.train);  // before any run: it must fire
  const FolderPlan folder = setup.apply();
  const AuditManifest& manifest = folder.manifest;
  const NewManifestGuard manifest_guard(o.out_dir, folder.new_audit);

  AuditResult result;
  result.audit_id = manifest.audit_id;
  result.trained_runs = folder.to_train;
  for (const PlannedRun& p : plan) result.trace_files.push_back(o.out_dir / trace_name(p.index));

  std::mutex progress_mutex;
  train::RunOptions base_options;
  base_options.threads = o.threads;
  base_options.mode = o.mode;

  auto run_one = [&](const PlannedRun& p) {
    train::RunOptions run_options = base_options;
    run_options.seeds = p.seeds;
    train::Trainer trainer(spec, data, run_options);
    if (trainer.ops().name() != manifest.backend) {
      throw RuntimeFailure("run " + std::to_string(p.index) + " would train on " +
                           trainer.ops().name() + ", the audit's runs train on " +
                           manifest.backend + " (" + o.out_dir.string() + "/audit.json)");
    }

    TraceHeader h;
    h.tool_version = o.tool_version;
    h.audit_id = manifest.audit_id;
    h.spec = manifest.spec;
    h.spec_digest = manifest.spec_digest;
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
    if (faulty) h.fault = fault_json(o.fault);

    const std::filesystem::path trace_file = o.out_dir / trace_name(p.index);
    Recorder recorder(h, trainer.threads());
    SnapshotWriter snapshots(snapshot_dir_of(trace_file), o.snapshots,
                             {{"run", std::to_string(p.index)},
                              {"spec_digest", manifest.spec_digest},
                              {"audit_id", manifest.audit_id}});
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
    // The trace last: a whole trace under its name means the run's snapshots are complete too.
    write_trace(trace_file, recorder.finish(trainer, r));
    if (progress.run_finished) {
      std::lock_guard lock(progress_mutex);
      progress.run_finished(p.index, trace_file);
    }
  };

  std::vector<const PlannedRun*> pending;
  for (int index : folder.to_train) pending.push_back(&plan[static_cast<std::size_t>(index)]);
  const int jobs = std::clamp(o.jobs, 1, std::max(1, static_cast<int>(pending.size())));
  if (jobs == 1) {
    for (const PlannedRun* p : pending) run_one(*p);
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
          if (i >= pending.size()) return;
          try {
            run_one(*pending[i]);
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

  // The report is made from the folder, through the manifest, exactly as `compare DIR` makes it:
  // resumed and newly trained runs alike, and nothing of another audit.
  ComparisonOptions compare_options;
  compare_options.expect_identical = o.expect_identical;  // default: from the traces' policy
  compare_options.loss_tolerance = o.loss_tolerance;
  ManifestRuns runs = read_manifest_runs(o.out_dir, manifest, DamagedTrace::reject);
  std::vector<Trace> traces = whole_runs(o.out_dir, runs);
  std::vector<AuditFolderCheck> checks;
  checks.push_back(std::move(runs.check));
  result.comparison = compare_with_snapshots(traces, compare_options, std::move(checks));
  return result;
}

}  // namespace ra::audit
