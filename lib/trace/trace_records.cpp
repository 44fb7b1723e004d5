// The records of a trace, field by field: the type and range of every field
// (trace/trace_records.h). How records agree with each other: trace_read.cpp.
#include "trace/trace_records.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/text_excerpt.h"
#include "trace/loader_workers.h"
#include "trace/trace_header_fields.h"
#include "trace/trace_io.h"

namespace ra::trace::records {
namespace {

using nlohmann::json;

constexpr std::int64_t kLargestInt = std::numeric_limits<int>::max();

// An op record's optional in_types / out_types: one non-empty string per digest.
std::vector<std::string> types(const Field& o, const char* name, std::size_t count) {
  std::vector<std::string> out;
  if (!o.has(name)) return out;
  const Field list = o[name];
  for (const Field& t : list.elements()) out.push_back(t.nonempty_string());
  if (out.size() != count) {
    list.fail("expected " + std::to_string(count) + " types, one per digest, found " +
              std::to_string(out.size()));
  }
  return out;
}

}  // namespace

TraceHeader read_header(const Field& r) {
  TraceHeader h;
  h.format_version = read_format_version(r["format_version"]);
  // Version 2 records ops, version 3 may: the header says in which steps.
  if (h.format_version == kTraceFormatVersionWithOps ||
      (has_status_records(h.format_version) && r.has("trace_ops"))) {
    h.trace_ops = read_op_window(r["trace_ops"]);
  } else if (r.has("trace_ops")) {
    r["trace_ops"].fail("op records need trace format version " +
                        std::to_string(kTraceFormatVersionWithOps) + ", " +
                        std::to_string(kTraceFormatVersionWithStatus) + " or " +
                        std::to_string(kTraceFormatVersionWithDetail));
  }
  // Version 4 says which steps record a digest per tensor; the versions before, every step.
  if (h.format_version == kTraceFormatVersionWithDetail) {
    h.tensor_digests = read_tensor_digest_plan(r["tensor_digests"]);
  } else if (r.has("tensor_digests")) {
    r["tensor_digests"].fail("a level of detail needs trace format version " +
                             std::to_string(kTraceFormatVersionWithDetail));
  }
  h.tool_version = r["tool_version"].string();
  // Optional: traces written before audit ids existed have none.
  if (r.has("audit_id")) {
    const Field id = r["audit_id"];
    h.audit_id = id.string();
    if (!is_audit_id(h.audit_id)) id.fail("must be 32 lowercase hex digits");
  }
  const Field spec = r["spec"];
  spec["name"].string();  // the report names the spec
  h.spec = spec.json();
  const Field digest = r["spec_digest"];
  const Digest128 recorded = digest.digest();
  const Digest128 actual = spec_digest_of(h.spec);
  if (recorded != actual) {
    digest.fail("is not the digest of the header's spec (that is " + actual.hex() +
                "): the spec or its digest was changed after the run");
  }
  h.spec_digest = actual.hex();
  h.run_index = static_cast<int>(r["run_index"].integer(0, kLargestInt));
  const Field group = r["seed_group"];
  h.seed_group = group.string();
  if (h.seed_group != "same" && h.seed_group != "different" && h.seed_group != "perturbed") {
    group.fail("expected \"same\", \"different\" or \"perturbed\", found " +
               describe_json(group.json()));
  }
  const Field seeds = r["seeds"];
  h.seed_init = seeds["init"].uint64();
  h.seed_data = seeds["data"].uint64();
  h.seed_dropout = seeds["dropout"].uint64();
  if (seeds.has("augment")) h.seed_augment = seeds["augment"].uint64();
  h.backend = r["backend"].nonempty_string();
  h.threads = static_cast<int>(r["threads"].integer(1, kLargestInt));
  h.determinism = read_determinism(r["determinism"]);
  const Field environment = r["environment"];
  environment.expect_object();
  h.environment = environment.json();
  h.ledger = read_ledger(r["ledger"]);
  const bool v3 = has_status_records(h.format_version);
  h.params = read_tensor_list(r["params"], v3, "parameter");
  if (v3) h.buffers = read_tensor_list(r["buffers"], true, "buffer");
  for (const Field& name : r["optimizer_state"].elements()) {
    h.optimizer_state.push_back(name.string());
  }
  // Older writers of format 1 may leave the fault out: absent means none.
  if (r.has("fault") && !r["fault"].is_null()) h.fault = read_fault(r["fault"], h.run_index);
  read_recorder_fields(r, h);
  if (r.has("perturbation")) h.perturbation = read_perturbation(r["perturbation"]);
  if (h.perturbation.has_value() != (h.seed_group == "perturbed")) {
    group.fail(h.perturbation ? "a run with a perturbation must be of the \"perturbed\" group"
                              : "a \"perturbed\" run must name its perturbation");
  }
  return h;
}

// The op records of a step: present exactly when the step is in the header's window.
void read_ops(const Field& r, const TraceHeader& h, StepRecord& s) {
  const bool expected = h.trace_ops && h.trace_ops->contains(s.step);
  if (!r.has("ops")) {
    if (expected)
      r.fail("field 'ops' is missing: step " + std::to_string(s.step) + " is in the op window");
    return;
  }
  const Field ops = r["ops"];
  if (!expected) ops.fail("step " + std::to_string(s.step) + " is outside the op window");
  s.ops_recorded = true;
  for (const Field& o : ops.elements()) {
    OpRecord rec;
    rec.op = o["op"].nonempty_string();
    if (o.has("layer")) rec.layer = o["layer"].string();
    if (o.has("mode")) {
      read_kernel_mode(o["mode"]);
      rec.mode = o["mode"].string();
    }
    if (o.has("ledger_key")) rec.ledger_key = o["ledger_key"].string();
    if (o.has("algorithm")) {
      rec.algorithm = o["algorithm"].nonempty_string();
      // null: cuDNN's log named no notes for the engine (lib/python/repro_audit/cudnn_log.py).
      if (!o["algorithm_deterministic"].is_null()) {
        rec.algorithm_deterministic = o["algorithm_deterministic"].boolean();
      }
    }
    for (const Field& d : o["in"].elements()) rec.in.push_back(d.digest());
    for (const Field& d : o["out"].elements()) rec.out.push_back(d.digest());
    rec.in_types = types(o, "in_types", rec.in.size());
    rec.out_types = types(o, "out_types", rec.out.size());
    s.ops.push_back(std::move(rec));
  }
}

// A record's per-buffer digests (version 3; none before).
std::vector<Digest128> read_buffer_digests(const Field& r, const TraceHeader& h) {
  if (!has_status_records(h.format_version)) return {};
  return r["buffers"].digests(h.buffers.size(), "buffers");
}

// A float kept as exact bits and, for reading, as a JSON number: the two must agree (the
// writer writes a NaN or an infinity as null).
void check_float_copy(const Field& value, std::uint32_t bits, const char* bits_field) {
  const float exact = std::bit_cast<float>(bits);
  if (!std::isfinite(exact)) {
    if (!value.is_null()) {
      value.fail("expected null (" + std::string(bits_field) + " " + bits_hex(bits) +
                 " is not finite), found " + describe_json(value.json()));
    }
  } else if (value.is_null() || value.number() != static_cast<double>(exact)) {
    value.fail("is " + describe_json(value.json()) + ", but " + bits_field + " " + bits_hex(bits) +
               " is " + json(exact).dump());
  }
}

namespace {

// A step's gradients, weights and buffers: a digest per tensor, or (version 4, a step outside the
// header's tensor_digests) one per category, never both.
void read_step_tensors(const Field& r, const TraceHeader& h, StepRecord& s) {
  s.per_tensor = !h.tensor_digests || h.tensor_digests->at(s.step);
  const char* per_tensor[] = {"grads", "weights", "buffers"};
  const char* per_category[] = {"grads_digest", "weights_digest", "buffers_digest"};
  const std::string step = "step " + std::to_string(s.step);
  for (std::size_t k = 0; k < 3; ++k) {
    const char* unexpected = s.per_tensor ? per_category[k] : per_tensor[k];
    if (r.has(unexpected)) {
      r[unexpected].fail(s.per_tensor ? step + " records a digest per tensor (tensor_digests)"
                                      : step + " records one digest per category (tensor_digests)");
    }
  }
  if (s.per_tensor) {
    s.grads = r["grads"].digests(h.params.size(), "parameters");
    s.weights = r["weights"].digests(h.params.size(), "parameters");
    s.buffers = read_buffer_digests(r, h);
    return;
  }
  s.grads_digest = r["grads_digest"].digest();
  s.weights_digest = r["weights_digest"].digest();
  s.buffers_digest = r["buffers_digest"].digest();
}

}  // namespace

// A data-parallel step's buckets through the collective: only in a rank's trace whose header
// names the hook the recorder wrapped; each bucket's parameters among the header's.
void read_collectives(const Field& r, const TraceHeader& h, StepRecord& s) {
  if (!r.has("collectives")) return;
  const Field buckets = r["collectives"];
  if (!h.distributed || h.distributed->comm_hook.empty()) {
    buckets.fail("collective records need the header's distributed.comm_hook");
  }
  std::unordered_set<std::string> names;  // a step's buckets hold each parameter once: O(P)
  for (const TensorInfo& t : h.params) names.insert(t.name);
  for (const Field& b : buckets.elements()) {
    CollectiveRecord c;
    c.bucket = b["bucket"].count();
    for (const Field& p : b["params"].elements()) {
      c.params.push_back(p.nonempty_string());
      if (!names.contains(c.params.back()))
        p.fail("names no parameter of the header: '" + excerpt(c.params.back()) + "'");
    }
    c.elements = b["elements"].count();
    c.dtype = b["dtype"].nonempty_string();
    if (std::find(std::begin(kTraceDTypes), std::end(kTraceDTypes), c.dtype) ==
        std::end(kTraceDTypes)) {
      b["dtype"].fail("unknown dtype '" + excerpt(c.dtype) + "'");
    }
    c.before = b["before"].digest();
    c.after = b["after"].digest();
    s.collectives.push_back(std::move(c));
  }
}

StepRecord read_step(const Field& r, const TraceHeader& h) {
  StepRecord s;
  s.step = r["step"].count();
  s.epoch = r["epoch"].count();
  s.batch = r["batch"].count();
  s.batch_indices = r["indices"].digest();
  s.batch_inputs = r["inputs"].digest();
  s.batch_labels = r["labels"].digest();
  s.loss_bits = r["loss_bits"].float_bits();
  check_float_copy(r["loss"], s.loss_bits, "loss_bits");
  read_step_tensors(r, h, s);
  s.optimizer_state = r["optimizer_state"].digest();
  s.seconds = r["seconds"].nonnegative_number();
  read_collectives(r, h, s);
  return s;
}

EpochRecord read_epoch(const Field& r) {
  EpochRecord e;
  e.epoch = r["epoch"].count();
  e.steps = r["steps"].count();
  // The writer writes a mean loss that is not finite (a run that diverged to NaN) as null.
  const Field loss = r["train_loss"];
  e.mean_train_loss = loss.is_null() ? std::numeric_limits<double>::quiet_NaN() : loss.number();
  e.eval_loss = r["eval_loss"].number_or_null();
  e.eval_accuracy = r["eval_accuracy"].number_or_null();
  e.seconds = r["seconds"].nonnegative_number();
  return e;
}

FinalRecord read_final(const Field& r, const TraceHeader& h) {
  const std::size_t n = h.params.size();
  FinalRecord f;
  if (has_status_records(h.format_version)) read_end_status(r, f);
  f.steps = r["steps"].count();
  f.final_loss_bits = r["final_loss_bits"].float_bits();
  check_float_copy(r["final_loss"], f.final_loss_bits, "final_loss_bits");
  f.eval_loss = r["eval_loss"].number_or_null();
  f.eval_accuracy = r["eval_accuracy"].number_or_null();
  f.median_step_seconds = r["median_step_seconds"].nonnegative_number();
  f.total_seconds = r["total_seconds"].nonnegative_number();
  f.recording_seconds = r["recording_seconds"].nonnegative_number();
  if (r.has("recording_cost")) f.recording_cost = read_recording_cost(r["recording_cost"]);
  f.weights = r["weights"].digests(n, "parameters");
  f.buffers = read_buffer_digests(r, h);
  if (r.has("loader_workers")) f.loader_workers = read_loader_workers(r["loader_workers"]);
  if (r.has("predictions")) f.predictions = read_predictions(r["predictions"]);
  if (r.has("step_launch")) f.step_launch = read_step_launch(r["step_launch"]);
  // Every step of the run was launched one way (a resumed run's segments summed).
  if (f.step_launch) {
    const std::int64_t launched =
        f.step_launch->eager + f.step_launch->capture + f.step_launch->replay;
    if (launched != f.steps) {
      r["step_launch"].fail("counts " + std::to_string(launched) + " steps, the run has " +
                            std::to_string(f.steps));
    }
  }
  return f;
}

}  // namespace ra::trace::records
