#include "audit/trace_io.h"

#include <bit>
#include <cstdio>

#include "core/atomic_file.h"
#include "core/error.h"

namespace ra::audit {
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

std::string epoch_line(const EpochRecord& e) {
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

json header_fields(const TraceHeader& h) {
  json params = json::array();
  for (const TensorInfo& p : h.params) params.push_back({{"name", p.name}, {"shape", p.shape}});
  return {{"record", "header"},
          {"format_version", h.format_version},
          {"tool_version", h.tool_version},
          {"spec", h.spec},
          {"spec_digest", h.spec_digest},
          {"run_index", h.run_index},
          {"seed_group", h.seed_group},
          {"seeds", {{"init", h.seed_init}, {"data", h.seed_data}, {"dropout", h.seed_dropout}}},
          {"backend", h.backend},
          {"threads", h.threads},
          {"determinism", h.determinism},
          {"environment", h.environment},
          {"ledger", h.ledger},
          {"params", params},
          {"optimizer_state", h.optimizer_state},
          {"fault", h.fault}};
}

// audit_id only when set: a trace made outside an audit folder reads as before.
json header_json(const TraceHeader& h) {
  json header = header_fields(h);
  if (!h.audit_id.empty()) header["audit_id"] = h.audit_id;
  return header;
}

// Reads a trace line by line, naming the source and line in every error.
class TraceParser {
 public:
  TraceParser(std::string_view text, std::string source)
      : text_(text), source_(std::move(source)) {}

  Trace parse() {
    Trace t;
    t.source = source_;
    json rec;
    if (!next(rec) || rec.value("record", "") != "header")
      fail("the first record must be the header");
    t.header = header(rec);
    const std::size_t n = t.header.params.size();
    if (!next(rec) || rec.value("record", "") != "init") fail("the second record must be 'init'");
    t.initial_weights = digests(rec, "weights", n);
    bool ended = false;
    while (next(rec)) {
      if (ended) fail("records after the end record");
      const std::string kind = rec.value("record", "");
      if (kind == "step") {
        t.steps.push_back(step(rec, n));
        if (t.steps.back().step != static_cast<std::int64_t>(t.steps.size()) - 1) {
          fail("step " + std::to_string(t.steps.back().step) + " out of order (expected " +
               std::to_string(t.steps.size() - 1) + ")");
        }
      } else if (kind == "epoch") {
        t.epochs.push_back(epoch(rec));
      } else if (kind == "end") {
        t.final = final_record(rec, n);
        ended = true;
      } else {
        fail("unknown record '" + kind + "'");
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
      try {
        rec = json::parse(line);
      } catch (const json::parse_error& e) {
        fail(std::string("malformed JSON: ") + e.what());
      }
      if (!rec.is_object()) fail("a record must be a JSON object");
      return true;
    }
    return false;
  }

  template <class T>
  T get(const json& rec, const char* key) const {
    try {
      return rec.at(key).get<T>();
    } catch (const json::exception&) {
      fail(std::string("missing or malformed field '") + key + "'");
    }
  }

  Digest128 digest_field(const json& rec, const char* key) const {
    try {
      return Digest128::from_hex(get<std::string>(rec, key));
    } catch (const InputError& e) {
      fail(std::string("field '") + key + "': " + e.what());
    }
  }

  std::vector<Digest128> digests(const json& rec, const char* key, std::size_t expected) const {
    const auto texts = get<std::vector<std::string>>(rec, key);
    if (texts.size() != expected) {
      fail(std::string("field '") + key + "' has " + std::to_string(texts.size()) +
           " digests, the header names " + std::to_string(expected) + " parameters");
    }
    std::vector<Digest128> out;
    for (const std::string& s : texts) {
      try {
        out.push_back(Digest128::from_hex(s));
      } catch (const InputError& e) {
        fail(std::string("field '") + key + "': " + e.what());
      }
    }
    return out;
  }

  std::uint32_t bits(const json& rec, const char* key) const {
    try {
      return bits_from_hex(get<std::string>(rec, key));
    } catch (const InputError& e) {
      fail(std::string("field '") + key + "': " + e.what());
    }
  }

  TraceHeader header(const json& rec) const {
    TraceHeader h;
    h.format_version = get<int>(rec, "format_version");
    if (h.format_version != kTraceFormatVersion) {
      fail("trace format version " + std::to_string(h.format_version) +
           "; this tool reads version " + std::to_string(kTraceFormatVersion));
    }
    h.tool_version = get<std::string>(rec, "tool_version");
    // Optional: traces written before audit ids existed have none.
    if (rec.contains("audit_id")) {
      h.audit_id = get<std::string>(rec, "audit_id");
      if (!is_audit_id(h.audit_id)) fail("field 'audit_id' must be 32 lowercase hex digits");
    }
    h.spec = get<json>(rec, "spec");
    h.spec_digest = get<std::string>(rec, "spec_digest");
    h.run_index = get<int>(rec, "run_index");
    h.seed_group = get<std::string>(rec, "seed_group");
    const json seeds = get<json>(rec, "seeds");
    h.seed_init = get<std::uint64_t>(seeds, "init");
    h.seed_data = get<std::uint64_t>(seeds, "data");
    h.seed_dropout = get<std::uint64_t>(seeds, "dropout");
    h.backend = get<std::string>(rec, "backend");
    h.threads = get<int>(rec, "threads");
    h.determinism = get<json>(rec, "determinism");
    h.environment = get<json>(rec, "environment");
    h.ledger = get<json>(rec, "ledger");
    for (const json& p : get<json>(rec, "params")) {
      h.params.push_back({get<std::string>(p, "name"), get<Shape>(p, "shape")});
    }
    h.optimizer_state = get<std::vector<std::string>>(rec, "optimizer_state");
    h.fault = rec.value("fault", json(nullptr));
    return h;
  }

  StepRecord step(const json& rec, std::size_t n) const {
    StepRecord r;
    r.step = get<std::int64_t>(rec, "step");
    r.epoch = get<std::int64_t>(rec, "epoch");
    r.batch = get<std::int64_t>(rec, "batch");
    r.batch_indices = digest_field(rec, "indices");
    r.batch_inputs = digest_field(rec, "inputs");
    r.batch_labels = digest_field(rec, "labels");
    r.loss_bits = bits(rec, "loss_bits");
    r.grads = digests(rec, "grads", n);
    r.weights = digests(rec, "weights", n);
    r.optimizer_state = digest_field(rec, "optimizer_state");
    r.seconds = get<double>(rec, "seconds");
    return r;
  }

  std::optional<double> optional_number(const json& rec, const char* key) const {
    if (!rec.contains(key) || rec.at(key).is_null()) return std::nullopt;
    return get<double>(rec, key);
  }

  EpochRecord epoch(const json& rec) const {
    return EpochRecord{get<std::int64_t>(rec, "epoch"),       get<std::int64_t>(rec, "steps"),
                       get<double>(rec, "train_loss"),        optional_number(rec, "eval_loss"),
                       optional_number(rec, "eval_accuracy"), get<double>(rec, "seconds")};
  }

  FinalRecord final_record(const json& rec, std::size_t n) const {
    FinalRecord f;
    f.steps = get<std::int64_t>(rec, "steps");
    f.final_loss_bits = bits(rec, "final_loss_bits");
    f.eval_loss = optional_number(rec, "eval_loss");
    f.eval_accuracy = optional_number(rec, "eval_accuracy");
    f.median_step_seconds = get<double>(rec, "median_step_seconds");
    f.total_seconds = get<double>(rec, "total_seconds");
    f.recording_seconds = get<double>(rec, "recording_seconds");
    f.weights = digests(rec, "weights", n);
    return f;
  }

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
};

}  // namespace

std::string bits_hex(std::uint32_t bits) {
  char text[12];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

std::uint32_t bits_from_hex(const std::string& text) {
  if (text.size() != 10 || text[0] != '0' || text[1] != 'x' ||
      text.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) {
    throw InputError("malformed float bits '" + text + "': expected 0x and 8 hex digits");
  }
  return static_cast<std::uint32_t>(std::stoul(text.substr(2), nullptr, 16));
}

std::string serialize_trace(const Trace& t) {
  std::string out = header_json(t.header).dump() + "\n";
  out += json{{"record", "init"}, {"weights", digests_json(t.initial_weights)}}.dump() + "\n";
  std::size_t next_epoch = 0;
  for (const StepRecord& r : t.steps) {
    // Epoch records go right after their epoch's last step, keeping the file in time order.
    while (next_epoch < t.epochs.size() && t.epochs[next_epoch].epoch < r.epoch) {
      out += epoch_line(t.epochs[next_epoch++]);
    }
    out += json{{"record", "step"},
                {"step", r.step},
                {"epoch", r.epoch},
                {"batch", r.batch},
                {"indices", r.batch_indices.hex()},
                {"inputs", r.batch_inputs.hex()},
                {"labels", r.batch_labels.hex()},
                {"loss_bits", bits_hex(r.loss_bits)},
                {"loss", std::bit_cast<float>(r.loss_bits)},
                {"grads", digests_json(r.grads)},
                {"weights", digests_json(r.weights)},
                {"optimizer_state", r.optimizer_state.hex()},
                {"seconds", r.seconds}}
               .dump() +
           "\n";
  }
  for (; next_epoch < t.epochs.size(); ++next_epoch) out += epoch_line(t.epochs[next_epoch]);
  if (t.final) {
    const FinalRecord& f = *t.final;
    out += json{{"record", "end"},
                {"steps", f.steps},
                {"final_loss_bits", bits_hex(f.final_loss_bits)},
                {"final_loss", std::bit_cast<float>(f.final_loss_bits)},
                {"eval_loss", optional_json(f.eval_loss)},
                {"eval_accuracy", optional_json(f.eval_accuracy)},
                {"median_step_seconds", f.median_step_seconds},
                {"total_seconds", f.total_seconds},
                {"recording_seconds", f.recording_seconds},
                {"weights", digests_json(f.weights)}}
               .dump() +
           "\n";
  }
  return out;
}

void write_trace(const std::filesystem::path& path, const Trace& trace) {
  write_file_atomic(path, serialize_trace(trace));
}

Trace parse_trace(std::string_view text, const std::string& source) {
  return TraceParser(text, source).parse();
}

Trace read_trace(const std::filesystem::path& path) {
  return parse_trace(read_file(path), path.string());
}

}  // namespace ra::audit
