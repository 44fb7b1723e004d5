// Writing traces: the records as JSON lines, in time order (trace/trace_io.h,
// docs/trace-format.md). Reading them back: trace_read.cpp.
#include "trace/trace_io.h"

#include <bit>
#include <cstdio>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text_excerpt.h"
#include "trace/loader_workers.h"
#include "trace/resume_record.h"
#include "trace/tensor_digests.h"

namespace ra::trace {
namespace {

using nlohmann::json;

json digests_json(const std::vector<Digest128>& ds) {
  json a = json::array();
  for (const Digest128& d : ds) a.push_back(d.hex());
  return a;
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string epoch_text(const EpochRecord& e) {
  return json{{"record", "epoch"},
              {"epoch", e.epoch},
              {"steps", e.steps},
              {"train_loss", e.mean_train_loss},
              {"eval_loss", optional_json(e.eval_loss)},
              {"eval_accuracy", optional_json(e.eval_accuracy)},
              {"seconds", e.seconds}}
             .dump() +
         "\n";
}

json seeds_json(const TraceHeader& h) {
  json seeds{{"init", h.seed_init}, {"data", h.seed_data}, {"dropout", h.seed_dropout}};
  if (h.seed_augment) seeds["augment"] = *h.seed_augment;
  return seeds;
}

bool is_v3(const TraceHeader& h) {
  return has_status_records(h.format_version);
}

// {name, shape}; with the dtype in version 3.
json tensors_json(const std::vector<TensorInfo>& tensors, bool v3) {
  json out = json::array();
  for (const TensorInfo& p : tensors) {
    out.push_back({{"name", p.name}, {"shape", p.shape}});
    if (v3) out.back()["dtype"] = p.dtype;
  }
  return out;
}

json header_fields(const TraceHeader& h) {
  json params = tensors_json(h.params, is_v3(h));
  return {{"record", "header"},
          {"format_version", h.format_version},
          {"tool_version", h.tool_version},
          {"spec", h.spec},
          {"spec_digest", h.spec_digest},
          {"run_index", h.run_index},
          {"seed_group", h.seed_group},
          {"seeds", seeds_json(h)},
          {"backend", h.backend},
          {"threads", h.threads},
          {"determinism", h.determinism},
          {"environment", h.environment},
          {"ledger", h.ledger},
          {"params", params},
          {"optimizer_state", h.optimizer_state},
          {"fault", h.fault}};
}

// audit_id only when set: a trace made outside an audit folder reads as before; trace_ops only
// in a version 2 trace.
json header_json(const TraceHeader& h) {
  json header = header_fields(h);
  if (!h.audit_id.empty()) header["audit_id"] = h.audit_id;
  if (is_v3(h)) header["buffers"] = tensors_json(h.buffers, true);
  if (h.trace_ops) {
    header["trace_ops"] = {{"first", h.trace_ops->first},
                           {"last", h.trace_ops->last ? json(*h.trace_ops->last) : json(nullptr)}};
  }
  // The PyTorch recorder's fields, as it wrote them (absent when it did not).
  if (!h.rng_states.is_null()) header["rng_states"] = h.rng_states;
  if (!h.seeded.is_null()) header["seeded"] = h.seeded;
  if (!h.recorder_warnings.empty()) header["recorder_warnings"] = h.recorder_warnings;
  if (h.tensor_digests) header["tensor_digests"] = to_json(*h.tensor_digests);
  if (h.perturbation) {
    const Perturbation& p = *h.perturbation;
    header["perturbation"] = {{"tensor", p.tensor},
                              {"element", p.element},
                              {"bit", p.bit},
                              {"before_bits", bits_hex(p.before)},
                              {"after_bits", bits_hex(p.after)}};
  }
  if (h.distributed) {
    json nccl = json::object();
    for (const auto& [name, value] : h.distributed->nccl) nccl[name] = value;
    header["distributed"] = {{"rank", h.distributed->rank},
                             {"world_size", h.distributed->world_size},
                             {"backend", h.distributed->backend},
                             {"nccl", nccl}};
    if (!h.distributed->comm_hook.empty()) {
      header["distributed"]["comm_hook"] = h.distributed->comm_hook;
      header["distributed"]["bucket_cap_bytes"] = h.distributed->bucket_cap_bytes.value_or(0);
    }
  }
  return header;
}

// {"op", "layer", "mode", "ledger_key", "algorithm", "algorithm_deterministic", "in", "out"};
// layer, mode, ledger_key and the algorithm only when set.
json op_json(const OpRecord& o) {
  json r{{"op", o.op}};
  if (!o.layer.empty()) r["layer"] = o.layer;
  if (!o.mode.empty()) r["mode"] = o.mode;
  if (!o.ledger_key.empty()) r["ledger_key"] = o.ledger_key;
  if (!o.algorithm.empty()) {
    r["algorithm"] = o.algorithm;
    r["algorithm_deterministic"] = o.algorithm_deterministic.value_or(true);
  }
  r["in"] = digests_json(o.in);
  r["out"] = digests_json(o.out);
  if (!o.in_types.empty()) r["in_types"] = o.in_types;
  if (!o.out_types.empty()) r["out_types"] = o.out_types;
  return r;
}

json step_json(const StepRecord& r, bool v3) {
  json line{{"record", "step"},
            {"step", r.step},
            {"epoch", r.epoch},
            {"batch", r.batch},
            {"indices", r.batch_indices.hex()},
            {"inputs", r.batch_inputs.hex()},
            {"labels", r.batch_labels.hex()},
            {"loss_bits", bits_hex(r.loss_bits)},
            {"loss", std::bit_cast<float>(r.loss_bits)},
            {"optimizer_state", r.optimizer_state.hex()},
            {"seconds", r.seconds}};
  if (r.per_tensor) {
    line["grads"] = digests_json(r.grads);
    line["weights"] = digests_json(r.weights);
    if (v3) line["buffers"] = digests_json(r.buffers);
  } else {  // version 4's steps outside the per-tensor plan: one digest per category
    line["grads_digest"] = r.grads_digest.hex();
    line["weights_digest"] = r.weights_digest.hex();
    line["buffers_digest"] = r.buffers_digest.hex();
  }
  if (r.ops_recorded) {
    json ops = json::array();
    for (const OpRecord& o : r.ops) ops.push_back(op_json(o));
    line["ops"] = std::move(ops);
  }
  if (!r.collectives.empty()) {
    json buckets = json::array();
    for (const CollectiveRecord& c : r.collectives) {
      buckets.push_back({{"bucket", c.bucket},
                         {"params", c.params},
                         {"elements", c.elements},
                         {"dtype", c.dtype},
                         {"before", c.before.hex()},
                         {"after", c.after.hex()}});
    }
    line["collectives"] = std::move(buckets);
  }
  return line;
}

}  // namespace

json step_launch_json(const StepLaunchRecord& launches) {
  json reasons = json::object();
  for (const auto& [reason, count] : launches.eager_reasons) reasons[reason] = count;
  return {{"eager", launches.eager},
          {"capture", launches.capture},
          {"replay", launches.replay},
          {"eager_reasons", reasons}};
}

std::string bits_hex(std::uint32_t bits) {
  char text[12];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

std::uint32_t bits_from_hex(const std::string& text) {
  if (text.size() != 10 || text[0] != '0' || text[1] != 'x' ||
      text.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) {
    throw InputError("malformed float bits '" + excerpt(text) + "': expected 0x and 8 hex digits");
  }
  return static_cast<std::uint32_t>(std::stoul(text.substr(2), nullptr, 16));
}

std::string describe_failure(const FinalRecord& f) {
  return "failed (" + excerpt(f.error) + ") after " + std::to_string(f.steps) +
         (f.steps == 1 ? " step" : " steps");
}

std::string header_line(const TraceHeader& h) {
  return header_json(h).dump() + "\n";
}

std::string init_line(const TraceHeader& h, const std::vector<Digest128>& weights,
                      const std::vector<Digest128>& buffers) {
  json init{{"record", "init"}, {"weights", digests_json(weights)}};
  if (is_v3(h)) init["buffers"] = digests_json(buffers);
  return init.dump() + "\n";
}

std::string step_line(const TraceHeader& h, const StepRecord& r) {
  return step_json(r, is_v3(h)).dump() + "\n";
}

std::string epoch_line(const EpochRecord& e) {
  return epoch_text(e);
}

std::string end_line(const TraceHeader& h, const FinalRecord& f) {
  json end{{"record", "end"},
           {"steps", f.steps},
           {"final_loss_bits", bits_hex(f.final_loss_bits)},
           {"final_loss", std::bit_cast<float>(f.final_loss_bits)},
           {"eval_loss", optional_json(f.eval_loss)},
           {"eval_accuracy", optional_json(f.eval_accuracy)},
           {"median_step_seconds", f.median_step_seconds},
           {"total_seconds", f.total_seconds},
           {"recording_seconds", f.recording_seconds},
           {"weights", digests_json(f.weights)}};
  if (is_v3(h)) {
    end["buffers"] = digests_json(f.buffers);
    end["status"] = f.status == RunStatus::failed ? "failed" : "completed";
    if (f.status == RunStatus::failed) end["error"] = f.error;
  }
  if (f.recording_cost) {
    end["recording_cost"] = {
        {"step_wall_seconds", f.recording_cost->step_wall_seconds},
        {"calibrated_step_wall_seconds", f.recording_cost->calibrated_step_wall_seconds},
        {"calibration_steps", f.recording_cost->calibration_steps}};
  }
  if (f.step_launch) end["step_launch"] = step_launch_json(*f.step_launch);
  if (!f.loader_workers.empty()) end["loader_workers"] = loader_workers_json(f.loader_workers);
  if (f.predictions) {
    end["predictions"] = {{"file", f.predictions->file},
                          {"samples", f.predictions->samples},
                          {"digest", f.predictions->digest.hex()}};
  }
  return end.dump() + "\n";
}

std::string serialize_trace(const Trace& t) {
  std::string out =
      header_line(t.header) + init_line(t.header, t.initial_weights, t.initial_buffers);
  std::size_t next_epoch = 0, next_resume = 0;
  for (const StepRecord& r : t.steps) {
    // Epoch records go right after their epoch's last step, keeping the file in time order.
    while (next_epoch < t.epochs.size() && t.epochs[next_epoch].epoch < r.epoch) {
      out += epoch_line(t.epochs[next_epoch++]);
    }
    for (; next_resume < t.resume_points.size() && t.resume_points[next_resume].step == r.step;
         ++next_resume) {
      out += resume_line(t.resume_points[next_resume]);
    }
    out += step_line(t.header, r);
  }
  for (; next_epoch < t.epochs.size(); ++next_epoch) out += epoch_line(t.epochs[next_epoch]);
  if (t.final) out += end_line(t.header, *t.final);
  return out;
}

void write_trace(const std::filesystem::path& path, const Trace& trace) {
  write_file_atomic(path, serialize_trace(trace));
}

Digest128 spec_digest_of(const nlohmann::json& spec) {
  const std::string text = spec.dump();
  return digest_bytes(DType::u8, Shape{static_cast<std::int64_t>(text.size())}, text.data(),
                      text.size());
}

}  // namespace ra::trace
