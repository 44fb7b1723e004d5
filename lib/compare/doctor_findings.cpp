// The doctor's checks (compare/doctor_checks.h): what one PyTorch run's trace shows of the
// obstacles to identical runs, each obstacle one finding, with every word its forms show.
#include <array>
#include <set>

#include "compare/compare_phases.h"
#include "compare/doctor_checks.h"

namespace ra::compare {
namespace {

// From PyTorch's notes on torch.use_deterministic_algorithms (1.13 to 2.x): the ops that are
// nondeterministic on CUDA, by their aten base name. With a deterministic kernel: the switch
// makes them use it; without: the switch makes them raise.
constexpr std::array kCudaNondeterministic = {
    CudaNondeterministicOp{"index_add", "", true},
    CudaNondeterministicOp{"scatter_add", "", true},
    CudaNondeterministicOp{"scatter_reduce", "with reduce=\"sum\" or \"mean\"", true},
    CudaNondeterministicOp{"index_put", "with accumulate=True", true},
    CudaNondeterministicOp{"_index_put_impl", "with accumulate=True", true},
    CudaNondeterministicOp{"index_copy", "", true},
    CudaNondeterministicOp{"put", "", true},
    CudaNondeterministicOp{"embedding_dense_backward", "", true},
    CudaNondeterministicOp{"cumsum", "", true},
    CudaNondeterministicOp{"_embedding_bag_backward", "with mode=\"max\"", false},
    CudaNondeterministicOp{"_embedding_bag_dense_backward", "", false},
    CudaNondeterministicOp{"avg_pool3d_backward", "", false},
    CudaNondeterministicOp{"adaptive_avg_pool2d_backward", "", false},
    CudaNondeterministicOp{"_adaptive_avg_pool2d_backward", "", false},
    CudaNondeterministicOp{"adaptive_avg_pool3d_backward", "", false},
    CudaNondeterministicOp{"_adaptive_avg_pool3d_backward", "", false},
    CudaNondeterministicOp{"max_pool3d_with_indices_backward", "", false},
    CudaNondeterministicOp{"adaptive_max_pool2d_backward", "", false},
    CudaNondeterministicOp{"fractional_max_pool2d_backward", "", false},
    CudaNondeterministicOp{"fractional_max_pool3d_backward", "", false},
    CudaNondeterministicOp{"max_unpool2d", "", false},
    CudaNondeterministicOp{"max_unpool3d", "", false},
    CudaNondeterministicOp{"upsample_linear1d_backward", "", false},
    CudaNondeterministicOp{"upsample_bilinear2d_backward", "", false},
    CudaNondeterministicOp{"upsample_bicubic2d_backward", "", false},
    CudaNondeterministicOp{"upsample_trilinear3d_backward", "", false},
    CudaNondeterministicOp{"reflection_pad1d_backward", "", false},
    CudaNondeterministicOp{"reflection_pad2d_backward", "", false},
    CudaNondeterministicOp{"reflection_pad3d_backward", "", false},
    CudaNondeterministicOp{"replication_pad1d_backward", "", false},
    CudaNondeterministicOp{"replication_pad2d_backward", "", false},
    CudaNondeterministicOp{"replication_pad3d_backward", "", false},
    CudaNondeterministicOp{"nll_loss2d_forward", "", false},
    CudaNondeterministicOp{"_ctc_loss_backward", "", false},
    CudaNondeterministicOp{"grid_sampler_2d_backward", "", false},
    CudaNondeterministicOp{"grid_sampler_3d_backward", "", false},
    CudaNondeterministicOp{"histc", "", false},
    CudaNondeterministicOp{"bincount", "with weights", false},
    CudaNondeterministicOp{"kthvalue", "", false},
    CudaNondeterministicOp{"median", "with indices", false},
};

bool on_cuda(const trace::Trace& t) {
  return t.header.backend == "pytorch-cuda";
}

bool env_true(const trace::Trace& t, const char* key) {
  const nlohmann::json& e = t.header.environment;
  return e.contains(key) && e[key].is_boolean() && e[key].get<bool>();
}

// An obstacle fails: it can make two runs of the script differ, so doctor exits 1
// (findings_exit_code). A precision note (TF32 allowed) is allowed, not passed: it changes the
// bits against fp32 and against an older GPU, which a user comparing across GPUs must know, but
// two runs on one GPU still agree bit for bit, so alone it leaves the exit status 0; allowed is
// the outcome the comparison's findings give to a difference that does not fail identity.
// (The id, the kind, is the registry's: doctor_findings sets it.)
Finding doctor_finding(const char* name, CheckOutcome outcome, std::string what, std::string fix) {
  Finding f;
  f.name = name;
  f.outcome = outcome;
  f.summary = what;
  f.data = {{"what", what}, {"fix", fix}};
  f.own_section = true;  // report/doctor_section.cpp
  f.facts = DoctorFacts{std::move(what), std::move(fix)};
  return f;
}

Finding obstacle(const char* name, std::string what, std::string fix) {
  return doctor_finding(name, CheckOutcome::failed, std::move(what), std::move(fix));
}

Finding switch_obstacle(std::string what, std::string fix) {
  return obstacle("determinism switch", std::move(what), std::move(fix));
}

// The op records' ops nondeterministic on CUDA, each the first time it ran, with its step.
struct RecordedOp {
  const trace::OpRecord* record;
  std::int64_t step;
  const CudaNondeterministicOp* op;
};
std::vector<RecordedOp> cuda_nondeterministic_ops(const trace::Trace& t) {
  std::vector<RecordedOp> out;
  std::set<std::string> named;
  for (const trace::StepRecord& s : t.steps) {
    for (const trace::OpRecord& o : s.ops) {
      const CudaNondeterministicOp* op = cuda_nondeterministic_op(o.op);
      if (op != nullptr && named.insert(o.op).second) out.push_back({&o, s.step, op});
    }
  }
  return out;
}

}  // namespace

const CudaNondeterministicOp* cuda_nondeterministic_op(const std::string& aten_op) {
  std::string base = aten_op.starts_with("aten.") ? aten_op.substr(5) : aten_op;
  base = base.substr(0, base.find('.'));                              // the overload
  if (base.ends_with("_") && !base.ends_with("__")) base.pop_back();  // in place: the same op
  for (const CudaNondeterministicOp& op : kCudaNondeterministic)
    if (base == op.name) return &op;
  return nullptr;
}

const DoctorFacts* doctor_facts(const Finding& f) {
  return std::any_cast<DoctorFacts>(&f.facts);
}

std::vector<Finding> doctor_seeds(const trace::Trace& t) {
  const nlohmann::json& s = t.header.seeded;
  if (s.is_null() && env_true(t, "spawned")) {
    // The run was recorded in a process that multiprocessing started (mp.spawn's workers, issue
    // 61: pytorch/examples imagenet seeds its parent only): seeding the parent does not reach it.
    return {obstacle("seeds",
                     "the worker process that recorded the run (started by multiprocessing, as "
                     "mp.spawn starts them) does not call repro_audit.seed_everything: a seed set "
                     "in the parent process does not reach it",
                     "call repro_audit.seed_everything(default=args.seed) at the start of the "
                     "worker function (the one mp.spawn runs), before the model is built")};
  }
  if (s.is_null()) {
    return {obstacle("seeds",
                     "the script does not call repro_audit.seed_everything: its runs are "
                     "not seeded alike, or not by the audit's seed",
                     "call repro_audit.seed_everything(default=args.seed) once, before the model "
                     "is built")};
  }
  if (s.contains("torch_initial_seed") && s["torch_initial_seed"] != s["seed"]) {
    return {obstacle("seeds",
                     "torch was seeded again after seed_everything (torch.initial_seed() is " +
                         s["torch_initial_seed"].dump() + ", not " + s["seed"].dump() +
                         "): the audit's seeds do not reach it",
                     "drop the later torch.manual_seed, or pass its seed as "
                     "seed_everything(default=...)")};
  }
  return {};
}

std::vector<Finding> doctor_switches(const trace::Trace& t) {
  std::vector<Finding> out;
  const bool risky_ops = !cuda_nondeterministic_ops(t).empty();
  if (!env_true(t, "deterministic_algorithms") && (on_cuda(t) || risky_ops)) {
    out.push_back(
        switch_obstacle("torch.use_deterministic_algorithms is off: ops with a "
                        "nondeterministic CUDA kernel run it without a word",
                        "torch.use_deterministic_algorithms(True) at the start of the "
                        "script"));
  }
  if (env_true(t, "cudnn_benchmark")) {
    out.push_back(
        switch_obstacle("torch.backends.cudnn.benchmark is on: cuDNN times candidate "
                        "algorithms and may pick another in each run",
                        "torch.backends.cudnn.benchmark = False"));
  }
  if (!on_cuda(t)) return out;
  if (!env_true(t, "cudnn_deterministic")) {
    out.push_back(
        switch_obstacle("torch.backends.cudnn.deterministic is off: cuDNN may run "
                        "nondeterministic convolution algorithms",
                        "torch.backends.cudnn.deterministic = True"));
  }
  const nlohmann::json& e = t.header.environment;
  if (!e.contains("cublas_workspace_config") || e["cublas_workspace_config"].is_null()) {
    out.push_back(
        switch_obstacle("CUBLAS_WORKSPACE_CONFIG is unset: cuBLAS may reduce in a "
                        "different order in each run (CUDA 10.2 and later)",
                        "export CUBLAS_WORKSPACE_CONFIG=:4096:8 before the script "
                        "starts"));
  }
  return out;
}

std::vector<Finding> doctor_precision(const trace::Trace& t) {
  if (!on_cuda(t)) return {};
  std::string tf32;
  if (env_true(t, "matmul_allow_tf32")) tf32 = "torch.backends.cuda.matmul.allow_tf32";
  if (env_true(t, "cudnn_allow_tf32")) {
    tf32 += (tf32.empty() ? "" : " and ") + std::string("torch.backends.cudnn.allow_tf32");
  }
  if (tf32.empty()) return {};
  return {doctor_finding("TF32 precision", CheckOutcome::allowed,
                         "TF32 is allowed (" + tf32 +
                             "): on Ampere and later GPUs matmuls or convolutions round to 10-bit "
                             "mantissas; identical run to run on one GPU, but other bits than "
                             "fp32 and than an older GPU",
                         "torch.backends.cuda.matmul.allow_tf32 = False and "
                         "torch.backends.cudnn.allow_tf32 = False, where results must match "
                         "across GPU generations")};
}

std::vector<Finding> doctor_loader(const trace::Trace& t) {
  std::vector<Finding> out;
  // Workers are seen only when the script watched its loader (rec.watch_loader).
  if (const auto workers = phases::loader_worker_findings({t})) {
    for (const SharedWorkerStream& s : workers->shared_streams) {
      out.push_back(obstacle("loader workers",
                             "DataLoader workers start from the same state of the random "
                             "stream " +
                                 s.stream + ": what they draw from it repeats across workers",
                             "seed it per worker in worker_init_fn, from the worker's seed "
                             "(torch.utils.data.get_worker_info().seed)"));
    }
  }
  return out;
}

std::vector<Finding> doctor_ops(const trace::Trace& t) {
  std::vector<Finding> out;
  for (const RecordedOp& r : cuda_nondeterministic_ops(t)) {
    const trace::OpRecord& o = *r.record;
    const std::string when = *r.op->when ? std::string(" ") + r.op->when : "";
    out.push_back(obstacle(
        "op nondeterministic on CUDA",
        o.op + (o.layer.empty() ? "" : " in " + o.layer) + " (step " + std::to_string(r.step) +
            ") is nondeterministic on CUDA" + when +
            (on_cuda(t) ? "" : "; identical on the CPU, where this run ran, but not on a GPU"),
        r.op->has_deterministic_kernel
            ? "torch.use_deterministic_algorithms(True) gives it a deterministic kernel"
            : "it has no deterministic CUDA kernel (torch.use_deterministic_algorithms(True) "
              "makes it raise): replace it, or keep it on the CPU"));
  }
  return out;
}

std::vector<Finding> doctor_cudnn(const trace::Trace& t) {
  std::vector<Finding> out;
  for (const nlohmann::json& entry : t.header.ledger) {
    if (!entry.contains("deterministic") || !entry["deterministic"].is_boolean() ||
        entry["deterministic"].get<bool>()) {
      continue;
    }
    out.push_back(obstacle("cuDNN engine",
                           "cuDNN ran " + entry.value("algorithm", std::string("?")) +
                               ", marked NONDETERMINISTIC, for " +
                               entry.value("layer", std::string("?")) + " (" +
                               entry.value("direction", std::string("?")) + ")",
                           "torch.backends.cudnn.deterministic = True and benchmark = False"));
  }
  return out;
}

}  // namespace ra::compare
