// Planning an audit: runs, seeds and the requested manifest (audit/audit_plan.h).
#include "audit/audit_plan.h"

#include <xxhash.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "spec/parse.h"
#include "trace/op_window.h"
#include "trace/tensor_digests.h"
#include "trace/trace_io.h"
#include "train/backend_choice.h"

namespace ra::audit {

std::uint64_t derived_seed(std::uint64_t spec_seed, int run) {
  const std::string name = "run-seed/" + std::to_string(run);
  return XXH3_64bits_withSeed(name.data(), name.size(), spec_seed);
}

std::vector<rundir::PlannedRun> plan_runs(const spec::ExperimentSpec& spec, const AuditOptions& o) {
  if (o.runs < 1) throw InputError("--runs must be at least 1");
  std::vector<rundir::PlannedRun> runs;
  auto add = [&](const std::string& group) {
    rundir::PlannedRun r;
    r.index = static_cast<int>(runs.size());
    r.group = group;
    r.seeds = rundir::PlannedSeeds::all(spec.seed);
    if (group == "different") {
      const std::uint64_t s = derived_seed(spec.seed, r.index);
      if (o.vary.init) r.seeds.init = s;
      if (o.vary.data) r.seeds.data = s;
      if (o.vary.dropout) r.seeds.dropout = s;
      if (o.vary.augment) r.seeds.augment = s;
    }
    runs.push_back(r);
  };
  if (o.seeds != SeedPolicy::different) {
    for (int i = 0; i < o.runs; ++i) add("same");
  }
  if (o.seeds != SeedPolicy::same) {
    for (int i = 0; i < o.runs; ++i) add("different");
  }
  if (o.seeds == SeedPolicy::all) {
    for (int i = 0; i < o.runs; ++i) add("perturbed");
  }
  if (o.fault && (o.fault->run < 0 || o.fault->run >= static_cast<int>(runs.size()))) {
    throw InputError("--inject-fault: run " + std::to_string(o.fault->run) + " is not in 0.." +
                     std::to_string(runs.size() - 1));
  }
  return runs;
}

nlohmann::json determinism_json(const spec::DeterminismSpec& d) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, mode] : d.ops) ops[spec::to_string(op)] = spec::to_string(mode);
  return {{"mode", spec::to_string(d.mode)}, {"ops", ops}};
}

nlohmann::json fault_json(const std::optional<record::FaultSpec>& f) {
  if (!f) return nullptr;
  nlohmann::json j{{"run", f->run},
                   {"step", f->step},
                   {"tensor", f->tensor},
                   {"element", f->element},
                   {"bit", f->bit}};
  if (!f->op.empty()) j["op"] = f->op;  // (absent in tensor faults, as before op faults)
  return j;
}

namespace {

// What decides the bits that the machine chooses (AuditManifest::runtime).
nlohmann::json runtime_facts(const std::string& backend) {
  if (backend == "cpu") return train::cpu_fingerprint();
  const nlohmann::json gpu = train::gpu_fingerprint();
  nlohmann::json facts = nlohmann::json::object();
  for (const char* key : {"gpu", "compute_capability", "cuda", "cudnn", "cublas"}) {
    facts[key] = gpu.value(key, nlohmann::json());
  }
  return facts;
}

}  // namespace

rundir::AuditManifest requested_manifest(const spec::ExperimentSpec& spec, const AuditOptions& o,
                                         const std::vector<rundir::PlannedRun>& plan) {
  rundir::AuditManifest m;
  m.tool_version = o.tool_version;
  m.spec = spec::to_json(spec);
  m.spec_digest = trace::spec_digest_of(m.spec).hex();  // as the trace header's
  m.device = spec::to_string(spec.device);
  // What the device resolves to here (a CPU run and a GPU run of one audit would differ).
  m.backend = spec.device == spec::Device::cpu || !train::fallback_notice(spec.device).empty()
                  ? "cpu"
                  : "cuda";
  m.threads = o.threads.value_or(spec.threads);
  if (m.threads <= 0) m.threads = hardware_threads();
  m.determinism = determinism_json(o.mode ? spec::DeterminismSpec{*o.mode, {}} : spec.determinism);
  m.seed_policy = to_string(o.seeds);
  m.snapshots = {{"epochs", o.snapshots.epochs},
                 {"every_steps", o.snapshots.every_steps},
                 {"batches", o.snapshots.batches}};
  m.fault = fault_json(o.fault);
  if (o.trace_ops) m.trace_ops = to_string(*o.trace_ops);
  if (o.tensor_digests) m.tensor_digests = to_string(*o.tensor_digests);
  m.interrupt_at = o.interrupt_at;
  if (o.algorithm_pins) {
    nlohmann::json pins = nlohmann::json::array();
    for (const backend::AlgorithmPin& p : o.algorithm_pins->pins) {
      pins.push_back({{"layer", p.layer}, {"direction", p.direction}, {"algorithm", p.algorithm}});
    }
    m.algorithm_pins = {{"source", o.algorithm_pins->source}, {"pins", pins}};
  }
  m.runs = plan;
  m.runtime = runtime_facts(m.backend);
  rundir::set_expectation(m, o.expect_identical, rundir::kExpectWhenDeterministic);
  return m;
}

AuditResult started_result(const rundir::FolderPlan& folder,
                           const std::vector<rundir::PlannedRun>& plan,
                           const std::filesystem::path& out_dir) {
  AuditResult result;
  result.audit_id = folder.manifest.audit_id;
  result.trained_runs = folder.to_train;
  for (const rundir::PlannedRun& p : plan) {
    result.trace_files.push_back(out_dir / rundir::trace_name(p.index));
  }
  return result;
}

}  // namespace ra::audit
