// Checked reading of the fields of a trace record that stand on their own: trace_header_fields.h.
#include "trace/trace_header_fields.h"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <set>

#include "core/text_excerpt.h"
#include "spec/spec.h"

namespace ra::trace {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace

int read_format_version(const Field& version) {
  if (!version.json().is_number_integer()) {  // 1.0, "1" and true are not the version 1
    version.fail("expected the trace format version, the integer 1, 2, 3 or 4, found " +
                 describe_json(version.json()));
  }
  if (version.json() < kTraceFormatVersion || version.json() > kTraceFormatVersionNewest) {
    version.fail("trace format version " + version.json().dump() +
                 "; this tool reads versions 1, 2, 3 and 4");
  }
  return version.json().get<int>();
}

TensorDigestPlan read_tensor_digest_plan(const Field& p) {
  TensorDigestPlan plan;
  const Field every = p["every"];
  if (!every.is_null()) plan.every = every.integer(1, std::numeric_limits<std::int64_t>::max());
  for (const Field& w : p["windows"].elements()) plan.windows.push_back(read_op_window(w));
  if (plan.all()) {
    p.fail("records every step per tensor: such a trace is written as version 3, not 4");
  }
  return plan;
}

OpWindow read_op_window(const Field& w) {
  OpWindow window;
  window.first = w["first"].count();
  const Field last = w["last"];
  if (!last.is_null()) {
    window.last = last.count();
    if (*window.last <= window.first) last.fail("must be greater than first");
  }
  return window;
}

void read_kernel_mode(const Field& mode) {
  if (!spec::kernel_mode_from_string(mode.string())) {
    mode.fail("expected deterministic, nondeterministic, autotune or batch_invariant, found " +
              describe_json(mode.json()));
  }
}

json read_determinism(const Field& d) {
  read_kernel_mode(d["mode"]);
  for (const auto& [op, mode] : d["ops"].members()) {
    if (!spec::reducing_op_from_string(op)) mode.fail("not a reducing op");
    read_kernel_mode(mode);
  }
  return d.json();
}

json read_ledger(const Field& l) {
  for (const Field& entry : l.elements()) {
    for (const char* key : {"layer", "direction", "algorithm", "math_type", "chosen_by"}) {
      entry[key].string();
    }
    // null: unknown (a PyTorch run whose cuDNN log named no notes for the engine).
    if (!entry["deterministic"].is_null()) entry["deterministic"].boolean();
    // An entry read from cuDNN's API log (a PyTorch run) names the engine, not the workspace,
    // which the log does not give.
    if (entry.has("engine")) entry["engine"].integer(-1, std::numeric_limits<std::int32_t>::max());
    if (entry.has("workspace_bytes") || !entry.has("engine")) entry["workspace_bytes"].uint64();
    // Autotuned entries of newer traces: what cudnnFind measured for the chosen algorithm.
    if (entry.has("autotune")) {
      const Field measured = entry["autotune"];
      measured["math_type"].string();
      measured["time_ms"].nonnegative_number();
      measured["workspace_bytes"].uint64();
    }
  }
  return l.json();
}

// The header's params (or, version 3, buffers): {name, shape} of f32 tensors of rank >= 1 in
// versions 1 and 2; {name, shape, dtype} in version 3, any rank (0-dim: []) and any dimension
// (0: an empty tensor) of any dtype of kTraceDTypes.
std::vector<TensorInfo> read_tensor_list(const Field& list, bool v3, const char* what) {
  std::vector<TensorInfo> out;
  std::set<std::string> names;
  for (const Field& p : list.elements()) {
    TensorInfo info;
    const Field name = p["name"];
    info.name = name.nonempty_string();
    if (!names.insert(info.name).second)
      name.fail(std::string(what) + " '" + excerpt(info.name) + "' named twice");
    const Field shape = p["shape"];
    for (const Field& dim : shape.elements()) {
      info.shape.push_back(dim.integer(v3 ? 0 : 1, std::numeric_limits<std::int64_t>::max()));
    }
    if (info.shape.empty() && !v3) shape.fail("a parameter has at least one dimension");
    if (v3) info.dtype = read_dtype(p["dtype"]);
    out.push_back(std::move(info));
  }
  return out;
}

std::string read_dtype(const Field& f) {
  const std::string name = f.string();
  for (const char* known : kTraceDTypes) {
    if (name == known) return name;
  }
  f.fail(
      "expected a dtype (f32, i32, i64, u8, f16, bf16, f64, i16, i8, bool, c32, c64, c128, "
      "u16, u32, u64, f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz), found " +
      describe_json(f.json()));
}

json read_fault(const Field& f, int run_index) {
  const Field run = f["run"];
  if (run.integer(0, kMaxInt) != run_index) {
    run.fail("the fault of run " + run.json().dump() + " is in the trace of run " +
             std::to_string(run_index));
  }
  f["step"].integer(std::numeric_limits<std::int64_t>::min(),
                    std::numeric_limits<std::int64_t>::max());
  f["element"].integer(std::numeric_limits<std::int64_t>::min(),
                       std::numeric_limits<std::int64_t>::max());
  f["tensor"].string();
  if (f.has("op")) f["op"].nonempty_string();
  f["bit"].integer(0, 31);
  return f.json();
}

Perturbation read_perturbation(const Field& f) {
  Perturbation p;
  p.tensor = f["tensor"].nonempty_string();
  p.element = f["element"].integer(0, std::numeric_limits<std::int64_t>::max());
  p.bit = static_cast<int>(f["bit"].integer(0, 31));
  p.before = f["before_bits"].float_bits();
  p.after = f["after_bits"].float_bits();
  if ((p.before ^ p.after) != (1u << p.bit)) {
    f["after_bits"].fail("differs from before_bits in other bits than bit " +
                         std::to_string(p.bit));
  }
  return p;
}

PredictionsRecord read_predictions(const Field& f) {
  PredictionsRecord p;
  p.file = f["file"].nonempty_string();
  const std::filesystem::path file(p.file);
  if (file.is_absolute() || p.file.find("..") != std::string::npos) {
    f["file"].fail("must be a path below the trace's folder");
  }
  p.samples = f["samples"].count();
  p.digest = f["digest"].digest();
  return p;
}

RecordingCost read_recording_cost(const Field& f) {
  RecordingCost c;
  c.step_wall_seconds = f["step_wall_seconds"].nonnegative_number();
  c.calibrated_step_wall_seconds = f["calibrated_step_wall_seconds"].nonnegative_number();
  // A median of no step, or of steps that took no time, is no reference to divide by.
  if (c.calibrated_step_wall_seconds <= 0.0) {
    f["calibrated_step_wall_seconds"].fail("must be a number > 0");
  }
  c.calibration_steps = f["calibration_steps"].integer(1, std::int64_t{1} << 40);
  return c;
}

StepLaunchRecord read_step_launch(const Field& f) {
  StepLaunchRecord r;
  r.eager = f["eager"].count();
  r.capture = f["capture"].count();
  r.replay = f["replay"].count();
  std::int64_t reasons = 0;
  for (const auto& [reason, count] : f["eager_reasons"].members()) {
    r.eager_reasons[reason] = count.integer(1, std::int64_t{1} << 62);
    reasons += r.eager_reasons[reason];
  }
  if (reasons != r.eager) {
    f["eager_reasons"].fail("counts " + std::to_string(reasons) + " eager steps, 'eager' " +
                            std::to_string(r.eager));
  }
  return r;
}

// Version 3: how the run ended; `error` (the exception's type) exactly when it failed.
namespace {

// {"torch": hex, "cuda": [hex, ...], ...}: every value a digest or a list of digests.
json read_rng_states(const Field& states) {
  for (const auto& [name, value] : states.members()) {
    if (value.json().is_array()) {
      for (const Field& d : value.elements()) d.digest();
    } else {
      value.digest();
    }
  }
  return states.json();
}

// {"rank", "world_size", "backend", "nccl": {name: value}}: rank below world size, world size 2
// or more (a single process writes no such field); "comm_hook" and "bucket_cap_bytes" when the
// recorder wrapped DDP's communication hook.
RankPlacement read_rank_placement(const Field& d) {
  RankPlacement p;
  p.world_size = static_cast<int>(d["world_size"].integer(2, kMaxInt));
  const Field rank = d["rank"];
  p.rank = static_cast<int>(rank.integer(0, kMaxInt));
  if (p.rank >= p.world_size) {
    rank.fail("rank " + std::to_string(p.rank) + " is not below the world size " +
              std::to_string(p.world_size));
  }
  p.backend = d["backend"].nonempty_string();
  for (const auto& [name, value] : d["nccl"].members()) p.nccl.emplace_back(name, value.string());
  if (d.has("comm_hook")) {  // the recorder wrapped DDP's hook (collective.py): both, or neither
    p.comm_hook = d["comm_hook"].nonempty_string();
    p.bucket_cap_bytes = d["bucket_cap_bytes"].count();
  }
  return p;
}

}  // namespace

void read_recorder_fields(const Field& r, TraceHeader& h) {
  if (r.has("rng_states")) h.rng_states = read_rng_states(r["rng_states"]);
  if (r.has("seeded")) {
    const Field seeded = r["seeded"];
    seeded["seed"].uint64();
    read_rng_states(seeded["rng_states"]);
    if (seeded.has("torch_initial_seed")) seeded["torch_initial_seed"].uint64();
    h.seeded = seeded.json();
  }
  if (r.has("recorder_warnings")) {
    for (const Field& w : r["recorder_warnings"].elements())
      h.recorder_warnings.push_back(w.nonempty_string());
  }
  if (r.has("distributed")) h.distributed = read_rank_placement(r["distributed"]);
}

void read_end_status(const Field& r, FinalRecord& f) {
  const Field status = r["status"];
  const std::string text = status.string();
  if (text == "failed") {
    f.status = RunStatus::failed;
    f.error = r["error"].nonempty_string();
  } else if (text == "completed") {
    if (r.has("error")) r["error"].fail("a completed run has no error");
  } else {
    status.fail("expected \"completed\" or \"failed\", found " + describe_json(status.json()));
  }
}

}  // namespace ra::trace
