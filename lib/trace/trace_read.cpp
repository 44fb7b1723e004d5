// Reading traces: every field checked, every record checked against the records before it
// (trace/trace_io.h, docs/trace-format.md). Writing them: trace_write.cpp.
#include "trace/trace_io.h"

#include <bit>
#include <cmath>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/statistics.h"
#include "core/text_excerpt.h"
#include "formats/json_text.h"
#include "spec/spec.h"
#include "trace/loader_workers.h"
#include "trace/trace_fields.h"
#include "trace/trace_header_fields.h"

namespace ra::audit {
namespace {

using nlohmann::json;

// Reads a trace line by line, naming the source and line in every error. Every field is read
// through a checked Field (trace_fields.h), and every record is checked against the records
// before it, so that a trace is whole or rejected: steps consecutive from 0; epochs numbered from
// 0, each step in the epoch after the last epoch record, batches consecutive within their epoch;
// each epoch record counting its steps and averaging their losses; the end record counting the
// steps and repeating the last step's loss and weights (the initial weights when there are
// none), the last epoch's evaluation and the median step time.
class TraceParser {
 public:
  TraceParser(std::string_view text, std::string source)
      : text_(text), source_(std::move(source)) {}

  Trace parse() {
    Trace t;
    t.source = source_;
    json rec;
    if (!next(rec) || kind_of(rec) != "header") fail("the first record must be the header");
    t.header = header(field(rec));
    const std::size_t n = t.header.params.size();
    if (!next(rec) || kind_of(rec) != "init") fail("the second record must be 'init'");
    t.initial_weights = field(rec)["weights"].digests(n, "parameters");
    t.initial_buffers = buffer_digests(field(rec), t.header);
    bool ended = false;
    while (next(rec)) {
      if (ended) fail("records after the end record");
      const Field r = field(rec);
      const std::string kind = kind_of(rec);
      if (kind == "step") {
        t.steps.push_back(step(r, t.header));
        check_step(r, t);
        read_ops(r, t.header, t.steps.back());
      } else if (kind == "epoch") {
        t.epochs.push_back(epoch(r));
        check_epoch(r, t);
      } else if (kind == "end") {
        t.final = final_record(r, t.header);
        check_end(r, t);
        ended = true;
      } else {
        r["record"].fail("unknown record '" + excerpt(kind) + "'");
      }
    }
    if (!ended) {
      throw InputError(source_ + ": trace is truncated (no end record after line " +
                       std::to_string(line_) + ")");
    }
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  bool next(json& rec) {
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      const std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (line.empty()) continue;
      // Strict: "<source>:<line>:<column>: ..." for syntax errors, duplicate keys, numbers out of
      // range and nesting deeper than spec::kMaxJsonDepth.
      rec = spec::parse_json_text(line, source_, line_);
      if (!rec.is_object()) fail("a record must be a JSON object");
      return true;
    }
    return false;
  }

  Field field(const json& rec) const { return Field(rec, RecordLocation{&source_, line_}); }

  std::string kind_of(const json& rec) const { return field(rec)["record"].string(); }

  // ---- Records: the type and range of every field.

  TraceHeader header(const Field& r) const {
    TraceHeader h;
    h.format_version = read_format_version(r["format_version"]);
    // Version 2 records ops, version 3 may: the header says in which steps.
    if (h.format_version == kTraceFormatVersionWithOps ||
        (h.format_version == kTraceFormatVersionWithStatus && r.has("trace_ops"))) {
      h.trace_ops = read_op_window(r["trace_ops"]);
    } else if (r.has("trace_ops")) {
      r["trace_ops"].fail("op records need trace format version " +
                          std::to_string(kTraceFormatVersionWithOps) + " or " +
                          std::to_string(kTraceFormatVersionWithStatus));
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
    h.run_index = static_cast<int>(r["run_index"].integer(0, kMaxInt));
    const Field group = r["seed_group"];
    h.seed_group = group.string();
    if (h.seed_group != "same" && h.seed_group != "different") {
      group.fail("expected \"same\" or \"different\", found " + describe_json(group.json()));
    }
    const Field seeds = r["seeds"];
    h.seed_init = seeds["init"].uint64();
    h.seed_data = seeds["data"].uint64();
    h.seed_dropout = seeds["dropout"].uint64();
    h.backend = r["backend"].nonempty_string();
    h.threads = static_cast<int>(r["threads"].integer(1, kMaxInt));
    h.determinism = read_determinism(r["determinism"]);
    const Field environment = r["environment"];
    environment.expect_object();
    h.environment = environment.json();
    h.ledger = read_ledger(r["ledger"]);
    const bool v3 = h.format_version == kTraceFormatVersionWithStatus;
    h.params = read_tensor_list(r["params"], v3, "parameter");
    if (v3) h.buffers = read_tensor_list(r["buffers"], true, "buffer");
    for (const Field& name : r["optimizer_state"].elements()) {
      h.optimizer_state.push_back(name.string());
    }
    // Older writers of format 1 may leave the fault out: absent means none.
    if (r.has("fault") && !r["fault"].is_null()) h.fault = read_fault(r["fault"], h.run_index);
    read_recorder_fields(r, h);
    return h;
  }

  // The op records of a step: present exactly when the step is in the header's window.
  static void read_ops(const Field& r, const TraceHeader& h, StepRecord& s) {
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

  // An op record's optional in_types / out_types: one non-empty string per digest.
  static std::vector<std::string> types(const Field& o, const char* name, std::size_t count) {
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

  // A record's per-buffer digests (version 3; none before).
  static std::vector<Digest128> buffer_digests(const Field& r, const TraceHeader& h) {
    if (h.format_version != kTraceFormatVersionWithStatus) return {};
    return r["buffers"].digests(h.buffers.size(), "buffers");
  }

  // A float kept as exact bits and, for reading, as a JSON number: the two must agree (the
  // writer writes a NaN or an infinity as null).
  static void check_float_copy(const Field& value, std::uint32_t bits, const char* bits_field) {
    const float exact = std::bit_cast<float>(bits);
    if (!std::isfinite(exact)) {
      if (!value.is_null()) {
        value.fail("expected null (" + std::string(bits_field) + " " + bits_hex(bits) +
                   " is not finite), found " + describe_json(value.json()));
      }
    } else if (value.is_null() || value.number() != static_cast<double>(exact)) {
      value.fail("is " + describe_json(value.json()) + ", but " + bits_field + " " +
                 bits_hex(bits) + " is " + json(exact).dump());
    }
  }

  static StepRecord step(const Field& r, const TraceHeader& h) {
    const std::size_t n = h.params.size();
    StepRecord s;
    s.step = r["step"].count();
    s.epoch = r["epoch"].count();
    s.batch = r["batch"].count();
    s.batch_indices = r["indices"].digest();
    s.batch_inputs = r["inputs"].digest();
    s.batch_labels = r["labels"].digest();
    s.loss_bits = r["loss_bits"].float_bits();
    check_float_copy(r["loss"], s.loss_bits, "loss_bits");
    s.grads = r["grads"].digests(n, "parameters");
    s.weights = r["weights"].digests(n, "parameters");
    s.buffers = buffer_digests(r, h);
    s.optimizer_state = r["optimizer_state"].digest();
    s.seconds = r["seconds"].nonnegative_number();
    return s;
  }

  static EpochRecord epoch(const Field& r) {
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

  static FinalRecord final_record(const Field& r, const TraceHeader& h) {
    const std::size_t n = h.params.size();
    FinalRecord f;
    if (h.format_version == kTraceFormatVersionWithStatus) read_end_status(r, f);
    f.steps = r["steps"].count();
    f.final_loss_bits = r["final_loss_bits"].float_bits();
    check_float_copy(r["final_loss"], f.final_loss_bits, "final_loss_bits");
    f.eval_loss = r["eval_loss"].number_or_null();
    f.eval_accuracy = r["eval_accuracy"].number_or_null();
    f.median_step_seconds = r["median_step_seconds"].nonnegative_number();
    f.total_seconds = r["total_seconds"].nonnegative_number();
    f.recording_seconds = r["recording_seconds"].nonnegative_number();
    f.weights = r["weights"].digests(n, "parameters");
    f.buffers = buffer_digests(r, h);
    if (r.has("loader_workers")) f.loader_workers = read_loader_workers(r["loader_workers"]);
    return f;
  }

  // ---- Whole: each record against the records before it.

  void check_step(const Field& r, const Trace& t) {
    const StepRecord& s = t.steps.back();
    const auto expected_step = static_cast<std::int64_t>(t.steps.size()) - 1;
    if (s.step != expected_step) {
      r["step"].fail("step " + std::to_string(s.step) + " out of order (expected " +
                     std::to_string(expected_step) + ")");
    }
    // A step belongs to the epoch after the last epoch record (written after its last step).
    const auto open_epoch = static_cast<std::int64_t>(t.epochs.size());
    if (s.epoch != open_epoch) {
      r["epoch"].fail("step " + std::to_string(s.step) + " is in epoch " + std::to_string(s.epoch) +
                      ", but after " + std::to_string(open_epoch) +
                      " epoch record(s) the open epoch is " + std::to_string(open_epoch));
    }
    if (s.batch != steps_in_epoch_) {
      r["batch"].fail("batch " + std::to_string(s.batch) + " of epoch " + std::to_string(s.epoch) +
                      " out of order (expected " + std::to_string(steps_in_epoch_) + ")");
    }
    ++steps_in_epoch_;
    epoch_loss_sum_ += std::bit_cast<float>(s.loss_bits);  // summed as the trainer sums them
  }

  void check_epoch(const Field& r, const Trace& t) {
    const EpochRecord& e = t.epochs.back();
    const auto expected_epoch = static_cast<std::int64_t>(t.epochs.size()) - 1;
    if (e.epoch != expected_epoch) {
      r["epoch"].fail("epoch " + std::to_string(e.epoch) + " out of order (expected " +
                      std::to_string(expected_epoch) + ")");
    }
    if (e.steps != steps_in_epoch_) {
      r["steps"].fail("epoch " + std::to_string(e.epoch) + " counts " + std::to_string(e.steps) +
                      " steps, but the trace has " + std::to_string(steps_in_epoch_) +
                      " step records in it");
    }
    const double mean =
        steps_in_epoch_ ? epoch_loss_sum_ / static_cast<double>(steps_in_epoch_) : 0.0;
    const bool agrees =
        std::isfinite(mean) ? e.mean_train_loss == mean : !std::isfinite(e.mean_train_loss);
    if (!agrees) {
      r["train_loss"].fail("is " + number_text(e.mean_train_loss) + ", but the mean of the " +
                           std::to_string(steps_in_epoch_) + " step losses of epoch " +
                           std::to_string(e.epoch) + " is " + number_text(mean));
    }
    steps_in_epoch_ = 0;
    epoch_loss_sum_ = 0.0;
  }

  void check_end(const Field& r, const Trace& t) const {
    const FinalRecord& f = *t.final;
    if (f.steps != static_cast<std::int64_t>(t.steps.size())) {
      r["steps"].fail("the end record counts " + std::to_string(f.steps) +
                      " steps, but the trace has " + std::to_string(t.steps.size()) +
                      " step records");
    }
    if (steps_in_epoch_ > 0) {
      r.fail("epoch " + std::to_string(t.steps.back().epoch) +
             " has no epoch record after its last step");
    }
    // The final loss is the last step's loss; the final weights are the last step's weights
    // (the initial weights of a run without steps).
    const std::string last = t.steps.empty() ? std::string("the init record")
                                             : "step " + std::to_string(t.steps.back().step);
    if (!t.steps.empty() && f.final_loss_bits != t.steps.back().loss_bits) {
      r["final_loss_bits"].fail("is " + bits_hex(f.final_loss_bits) + ", but the loss of " + last +
                                " is " + bits_hex(t.steps.back().loss_bits));
    }
    check_final_digests(r, "weights", f.weights,
                        t.steps.empty() ? t.initial_weights : t.steps.back().weights,
                        t.header.params, last);
    check_final_digests(r, "buffers", f.buffers,
                        t.steps.empty() ? t.initial_buffers : t.steps.back().buffers,
                        t.header.buffers, last);
    // The run's evaluation is its last epoch's.
    const EpochRecord* last_epoch = t.epochs.empty() ? nullptr : &t.epochs.back();
    const auto check_eval = [&](const char* key, const std::optional<double>& value,
                                const std::optional<double>& epoch_value) {
      if (value != epoch_value) {
        r[key].fail("is " + optional_text(value) + ", but the last epoch record says " +
                    optional_text(epoch_value));
      }
    };
    check_eval("eval_loss", f.eval_loss, last_epoch ? last_epoch->eval_loss : std::nullopt);
    check_eval("eval_accuracy", f.eval_accuracy,
               last_epoch ? last_epoch->eval_accuracy : std::nullopt);
    std::vector<double> seconds;
    seconds.reserve(t.steps.size());
    for (const StepRecord& s : t.steps) seconds.push_back(s.seconds);
    const double median_seconds = median(std::move(seconds));
    if (f.median_step_seconds != median_seconds) {
      r["median_step_seconds"].fail("is " + number_text(f.median_step_seconds) +
                                    ", but the median of the " + std::to_string(t.steps.size()) +
                                    " step times is " + number_text(median_seconds));
    }
  }

  // The end record's digests of `key` are those of the last step (the init record's without steps).
  static void check_final_digests(const Field& r, const char* key,
                                  const std::vector<Digest128>& final,
                                  const std::vector<Digest128>& last_digests,
                                  const std::vector<TensorInfo>& tensors, const std::string& last) {
    for (std::size_t p = 0; p < last_digests.size(); ++p) {
      if (final[p] != last_digests[p]) {
        r[key].elements()[p].fail("the final digest of " + tensors[p].name +
                                  " is not its digest in " + last + " (" + last_digests[p].hex() +
                                  ")");
      }
    }
  }

  static std::string number_text(double v) {
    return std::isfinite(v) ? json(v).dump() : std::string("not finite");
  }
  static std::string optional_text(const std::optional<double>& v) {
    return v ? number_text(*v) : std::string("null");
  }

  static constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
  std::int64_t steps_in_epoch_ = 0;  // step records since the last epoch record
  double epoch_loss_sum_ = 0.0;      // their losses, summed in order
};

}  // namespace

Trace parse_trace(std::string_view text, const std::string& source) {
  return TraceParser(text, source).parse();
}

Trace read_trace(const std::filesystem::path& path) {
  // 1 GiB: a step record is ~1 KB for a model of 8 tensors, so this is about a million steps.
  constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{1} << 30;
  return parse_trace(read_file(path, kMaxTraceBytes, "a trace"), path.string());
}

}  // namespace ra::audit
