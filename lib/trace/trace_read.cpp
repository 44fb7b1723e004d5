// Reading traces record by record: every field checked (trace_records.cpp), every record checked
// against the records before it (trace/trace_reader.h, trace/trace_io.h, docs/trace-format.md).
// Writing them: trace_write.cpp.
#include "trace/trace_reader.h"

#include <bit>
#include <cmath>
#include <limits>

#include "core/byte_reader.h"
#include "core/error.h"
#include "core/statistics.h"
#include "core/text_excerpt.h"
#include "formats/json_text.h"
#include "spec/spec.h"
#include "trace/resume_record.h"
#include "trace/tensor_digests.h"
#include "trace/trace_fields.h"
#include "trace/trace_io.h"
#include "trace/trace_records.h"

namespace ra::trace {
namespace {

using nlohmann::json;

// The lines of a trace, without their newlines. `terminated` is false for a last line that has
// no newline: a line a writer was cut off in (or a file edited by hand).
class LineSource {
 public:
  virtual ~LineSource() = default;
  virtual bool next(std::string_view& line, bool& terminated) = 0;
};

class TextLines final : public LineSource {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line, bool& terminated) override {
    if (pos_ >= text_.size()) return false;
    std::size_t end = text_.find('\n', pos_);
    terminated = end != std::string_view::npos;
    if (!terminated) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// A file read in 1 MiB pieces (gunzipped when it is gzip), a line at a time.
class FileLines final : public LineSource {
 public:
  explicit FileLines(const std::filesystem::path& path) : in_(path.string()) {}
  bool next(std::string_view& line, bool& terminated) override {
    std::size_t newline;
    while ((newline = buffer_.find('\n', start_)) == std::string::npos) {
      if (eof_) {
        if (start_ >= buffer_.size()) return false;
        terminated = false;
        line = std::string_view(buffer_).substr(start_);
        start_ = buffer_.size();
        return true;
      }
      refill();
    }
    terminated = true;
    line = std::string_view(buffer_).substr(start_, newline - start_);
    start_ = newline + 1;
    return true;
  }

 private:
  // A line longer than this is no record this tool wrote (a step of ResNet-50 with every op
  // recorded takes about 200 KB): refused instead of filling memory.
  static constexpr std::size_t kMaxLineBytes = std::size_t{256} << 20;
  static constexpr std::size_t kPieceBytes = std::size_t{1} << 20;

  void refill() {
    buffer_.erase(0, start_);
    start_ = 0;
    if (buffer_.size() > kMaxLineBytes) {
      throw InputError(in_.path() + ": a line longer than 256 MiB: not a trace");
    }
    const std::size_t had = buffer_.size();
    buffer_.resize(had + kPieceBytes);
    const std::size_t got = in_.read(buffer_.data() + had, kPieceBytes);
    buffer_.resize(had + got);
    eof_ = got < kPieceBytes;
  }

  ByteReader in_;
  std::string buffer_;
  std::size_t start_ = 0;
  bool eof_ = false;
};

}  // namespace

namespace detail {

// Reads a trace record by record, naming the source and line in every error. Every field is read
// through a checked Field (trace_records.h), and every record is checked against the records
// before it, so that a trace is whole or rejected: steps consecutive from 0; epochs numbered from
// 0, each step in the epoch after the last epoch record, batches consecutive within their epoch;
// each epoch record counting its steps and averaging their losses; the end record counting the
// steps and repeating the last step's loss and weights (the initial weights when there are
// none), the last epoch's evaluation and the median step time. What it keeps of the steps: the
// last one's loss and digests, and every step's time.
class TraceParser {
 public:
  TraceParser(std::unique_ptr<LineSource> lines, std::string source, TraceReader::End end)
      : source_(std::move(source)), lines_(std::move(lines)), end_(end) {
    json rec;
    if (!next(rec) || kind_of(rec) != "header") fail("the first record must be the header");
    header_ = records::read_header(field(rec));
    const std::size_t n = header_.params.size();
    if (!next(rec) || kind_of(rec) != "init") fail("the second record must be 'init'");
    initial_weights_ = field(rec)["weights"].digests(n, "parameters");
    initial_buffers_ = records::read_buffer_digests(field(rec), header_);
  }

  bool next_step(StepRecord& out) {
    json rec;
    while (!ended_) {
      if (!next(rec)) {
        if (end_ == TraceReader::End::optional) return false;
        throw InputError(source_ + ": trace is truncated (no end record after line " +
                         std::to_string(line_) + ")");
      }
      const Field r = field(rec);
      const std::string kind = kind_of(rec);
      if (kind == "step") {
        StepRecord s = records::read_step(r, header_);
        check_step(r, s);
        records::read_ops(r, header_, s);
        keep_last(s);
        out = std::move(s);
        return true;
      }
      if (kind == "epoch") {
        epochs_.push_back(records::read_epoch(r));
        check_epoch(r);
      } else if (kind == "resume") {
        const std::optional<ResumePoint> last =
            resume_points_.empty() ? std::nullopt : std::optional(resume_points_.back());
        resume_points_.push_back(records::read_resume(r));
        const bool repeated =
            last && last->step == steps_ && last->resumed == resume_points_.back().resumed;
        if (resume_points_.back().step != steps_) {
          r["step"].fail("a resume record before step " + std::to_string(steps_) + " says step " +
                         std::to_string(resume_points_.back().step));
        }
        // A run passes a point, or resumes at it, once: a second such record would be judged
        // twice.
        if (repeated) {
          r["step"].fail("a second resume record before step " + std::to_string(steps_));
        }
      } else if (kind == "end") {
        final_ = records::read_final(r, header_);
        check_end(r);
        ended_ = true;
        if (next(rec)) fail("records after the end record");
      } else {
        r["record"].fail("unknown record '" + excerpt(kind) + "'");
      }
    }
    return false;
  }

  TraceHeader header_;
  std::vector<Digest128> initial_weights_, initial_buffers_;
  std::vector<EpochRecord> epochs_;
  std::vector<ResumePoint> resume_points_;
  std::optional<FinalRecord> final_;
  std::int64_t steps_ = 0;
  std::string source_;
  std::string cut_off_;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  bool next(json& rec) {
    std::string_view line;
    bool terminated = true;
    while (lines_->next(line, terminated)) {
      ++line_;
      if (line.empty()) continue;
      if (!terminated && end_ == TraceReader::End::optional) {
        // A partial trace's last line without its newline: the write it was in did not finish.
        cut_off_ = "its last line, line " + std::to_string(line_) + ", was cut off while written";
        return false;
      }
      // Strict: "<source>:<line>:<column>: ..." for syntax errors, duplicate keys, numbers out of
      // range and nesting deeper than formats::kMaxJsonDepth.
      rec = formats::parse_json_text(line, source_, line_);
      if (!rec.is_object()) fail("a record must be a JSON object");
      return true;
    }
    return false;
  }

  Field field(const json& rec) const { return Field(rec, RecordLocation{&source_, line_}); }

  std::string kind_of(const json& rec) const { return field(rec)["record"].string(); }

  void keep_last(const StepRecord& s) {
    ++steps_;
    last_epoch_ = s.epoch;
    last_loss_bits_ = s.loss_bits;
    last_per_tensor_ = s.per_tensor;
    last_weights_ = s.weights;
    last_buffers_ = s.buffers;
    last_weights_digest_ = s.weights_digest;
    last_buffers_digest_ = s.buffers_digest;
    seconds_.push_back(s.seconds);
  }

  // ---- Whole: each record against the records before it.

  void check_step(const Field& r, const StepRecord& s) {
    const std::int64_t expected_step = steps_;
    if (s.step != expected_step) {
      r["step"].fail("step " + std::to_string(s.step) + " out of order (expected " +
                     std::to_string(expected_step) + ")");
    }
    // A step belongs to the epoch after the last epoch record (written after its last step).
    const auto open_epoch = static_cast<std::int64_t>(epochs_.size());
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

  void check_epoch(const Field& r) {
    const EpochRecord& e = epochs_.back();
    const auto expected_epoch = static_cast<std::int64_t>(epochs_.size()) - 1;
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

  void check_end(const Field& r) {
    const FinalRecord& f = *final_;
    if (f.steps != steps_) {
      r["steps"].fail("the end record counts " + std::to_string(f.steps) +
                      " steps, but the trace has " + std::to_string(steps_) + " step records");
    }
    if (steps_in_epoch_ > 0) {
      r.fail("epoch " + std::to_string(last_epoch_) + " has no epoch record after its last step");
    }
    // The final loss is the last step's loss; the final weights are the last step's weights
    // (the initial weights of a run without steps).
    const std::string last =
        steps_ == 0 ? std::string("the init record") : "step " + std::to_string(steps_ - 1);
    if (steps_ > 0 && f.final_loss_bits != last_loss_bits_) {
      r["final_loss_bits"].fail("is " + bits_hex(f.final_loss_bits) + ", but the loss of " + last +
                                " is " + bits_hex(last_loss_bits_));
    }
    if (steps_ > 0 && !last_per_tensor_) {  // a last step recorded per category (version 4)
      check_category_digest(r, "weights", f.weights, last_weights_digest_, last);
      check_category_digest(r, "buffers", f.buffers, last_buffers_digest_, last);
    } else {
      check_final_digests(r, "weights", f.weights, steps_ == 0 ? initial_weights_ : last_weights_,
                          header_.params, last);
      check_final_digests(r, "buffers", f.buffers, steps_ == 0 ? initial_buffers_ : last_buffers_,
                          header_.buffers, last);
    }
    // The run's evaluation is its last epoch's.
    const EpochRecord* last_epoch = epochs_.empty() ? nullptr : &epochs_.back();
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
    const double median_seconds = median(std::move(seconds_));
    if (f.median_step_seconds != median_seconds) {
      r["median_step_seconds"].fail("is " + number_text(f.median_step_seconds) +
                                    ", but the median of the " + std::to_string(steps_) +
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

  // The end record's digests of `key`, combined, are the category digest of a last step recorded
  // per category.
  static void check_category_digest(const Field& r, const char* key,
                                    const std::vector<Digest128>& final,
                                    const Digest128& last_digest, const std::string& last) {
    if (category_digest(final) != last_digest) {
      r[key].fail("the final digests, combined, are not the " + std::string(key) + "_digest of " +
                  last + " (" + last_digest.hex() + ")");
    }
  }

  static std::string number_text(double v) {
    return std::isfinite(v) ? json(v).dump() : std::string("not finite");
  }
  static std::string optional_text(const std::optional<double>& v) {
    return v ? number_text(*v) : std::string("null");
  }

  std::unique_ptr<LineSource> lines_;
  TraceReader::End end_;
  bool ended_ = false;
  std::size_t line_ = 0;
  std::int64_t steps_in_epoch_ = 0;  // step records since the last epoch record
  double epoch_loss_sum_ = 0.0;      // their losses, summed in order
  std::int64_t last_epoch_ = 0;
  std::uint32_t last_loss_bits_ = 0;
  bool last_per_tensor_ = true;
  std::vector<Digest128> last_weights_, last_buffers_;   // a last step recorded per tensor
  Digest128 last_weights_digest_, last_buffers_digest_;  // one recorded per category
  std::vector<double> seconds_;  // every step's, for the median the end record repeats
};

}  // namespace detail

TraceReader::TraceReader(const std::filesystem::path& path, End end)
    : parser_(std::make_unique<detail::TraceParser>(std::make_unique<FileLines>(path),
                                                    path.string(), end)) {}

TraceReader::TraceReader(std::string_view text, std::string source, End end)
    : parser_(std::make_unique<detail::TraceParser>(std::make_unique<TextLines>(text),
                                                    std::move(source), end)) {}

TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;

const TraceHeader& TraceReader::header() const {
  return parser_->header_;
}
const std::vector<Digest128>& TraceReader::initial_weights() const {
  return parser_->initial_weights_;
}
const std::vector<Digest128>& TraceReader::initial_buffers() const {
  return parser_->initial_buffers_;
}
const std::string& TraceReader::source() const {
  return parser_->source_;
}
bool TraceReader::next_step(StepRecord& out) {
  return parser_->next_step(out);
}
const std::vector<EpochRecord>& TraceReader::epochs() const {
  return parser_->epochs_;
}
const std::vector<ResumePoint>& TraceReader::resume_points() const {
  return parser_->resume_points_;
}
const std::optional<FinalRecord>& TraceReader::final() const {
  return parser_->final_;
}
std::int64_t TraceReader::steps_read() const {
  return parser_->steps_;
}
const std::string& TraceReader::cut_off() const {
  return parser_->cut_off_;
}

namespace {

// Every record of the reader's trace; its steps kept when `keep_steps`, else only counted.
Trace read_all(TraceReader& reader, bool keep_steps) {
  Trace t;
  t.source = reader.source();
  t.header = reader.header();
  t.initial_weights = reader.initial_weights();
  t.initial_buffers = reader.initial_buffers();
  StepRecord s;
  while (reader.next_step(s)) {
    if (keep_steps) t.steps.push_back(std::move(s));
  }
  t.epochs = reader.epochs();
  t.final = reader.final();
  t.resume_points = reader.resume_points();
  t.steps_in_source = !keep_steps;
  return t;
}

}  // namespace

Trace parse_trace(std::string_view text, const std::string& source) {
  TraceReader reader(text, source);
  return read_all(reader, true);
}

Trace read_trace(const std::filesystem::path& path) {
  TraceReader reader(path);
  return read_all(reader, true);
}

Trace read_trace_summary(const std::filesystem::path& path) {
  TraceReader reader(path);
  return read_all(reader, false);
}

PartialTrace read_partial_trace(const std::filesystem::path& path) {
  TraceReader reader(path, TraceReader::End::optional);
  PartialTrace out;
  out.header = reader.header();
  StepRecord s;
  while (reader.next_step(s)) {
  }
  out.steps = reader.steps_read();
  out.final = reader.final();
  out.cut_off = reader.cut_off();
  return out;
}

}  // namespace ra::trace
