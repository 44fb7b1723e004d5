// An invariance sweep's file (trace/invariance.h; docs/trace-format.md, "Invariance sweeps"):
// written whole, read whole or rejected.
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/base64.h"
#include "core/error.h"
#include "formats/json_text.h"
#include "trace/invariance.h"
#include "trace/trace_fields.h"

namespace ra::trace {
namespace {

using nlohmann::json;

constexpr const char* kKind = "repro-audit invariance sweep";
constexpr int kVersion = 1;
// A sweep's file holds one line per probe: 1 GiB is far beyond any real sweep.
constexpr std::uint64_t kMaxSweepBytes = std::uint64_t{1} << 30;

json sweep_row_json(const RowDigest& r) {
  return {{"digest", r.digest.hex()}, {"whole", r.whole}};
}

json sweep_probe_json(const InvarianceProbe& p) {
  json out{{"digest", p.output_digest.hex()}};
  if (!p.output_values.empty()) {
    out["values"] = base64_encode(std::string_view(
        reinterpret_cast<const char*>(p.output_values.data()), p.output_values.size() * 4));
  }
  json ops = json::array();
  for (const InvarianceOp& op : p.ops) {
    json inputs = json::array();
    for (const RowDigest& r : op.inputs) inputs.push_back(sweep_row_json(r));
    ops.push_back({{"op", op.op},
                   {"module", op.module},
                   {"inputs", inputs},
                   {"output", op.output ? sweep_row_json(*op.output) : json(nullptr)}});
  }
  const ProbeConfig& c = p.config;
  return {{"probe",
           {{"batch_size", c.batch_size},
            {"anchor_row", c.anchor_row},
            {"position", c.position},
            {"neighbours", c.neighbours},
            {"control", c.control}}},
          {"output", out},
          {"ops", ops}};
}

json sweep_header_json(const InvarianceSweep& s) {
  json control = nullptr;
  if (s.control) {
    control = {
        {"op_index", s.control->op_index}, {"op", s.control->op}, {"module", s.control->module}};
  }
  return {{"kind", kKind},
          {"version", s.version},
          {"source", s.source},
          {"model", s.model},
          {"mode", s.mode},
          {"device", s.device},
          {"dtype", s.dtype},
          {"batch_dim", s.batch_dim},
          {"sample_shape", s.sample_shape},
          {"output_shape", s.output_shape},
          {"control", control}};
}

std::vector<std::int64_t> read_shape(const Field& f) {
  std::vector<std::int64_t> shape;
  for (const Field& d : f.elements()) shape.push_back(d.count());
  return shape;
}

RowDigest read_row(const Field& f) {
  return {f["digest"].digest(), f["whole"].boolean()};
}

std::vector<float> read_values(const Field& f) {
  const std::string bytes = base64_decode(f.string(), "field '" + f.path() + "'");
  if (bytes.size() % 4 != 0) f.fail("float32 values: a multiple of 4 bytes");
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

InvarianceProbe read_probe(const Field& r) {
  InvarianceProbe p;
  const Field c = r["probe"];
  p.config.batch_size = static_cast<int>(c["batch_size"].integer(1, 1 << 24));
  p.config.anchor_row = static_cast<int>(c["anchor_row"].integer(0, p.config.batch_size - 1));
  p.config.position = c["position"].nonempty_string();
  p.config.neighbours = c["neighbours"].string();
  p.config.control = c["control"].boolean();
  const Field out = r["output"];
  p.output_digest = out["digest"].digest();
  if (out.has("values")) p.output_values = read_values(out["values"]);
  for (const Field& o : r["ops"].elements()) {
    InvarianceOp op;
    op.op = o["op"].nonempty_string();
    op.module = o["module"].string();
    for (const Field& i : o["inputs"].elements()) op.inputs.push_back(read_row(i));
    if (!o["output"].is_null()) op.output = read_row(o["output"]);
    p.ops.push_back(std::move(op));
  }
  return p;
}

void read_header(const Field& h, InvarianceSweep& s) {
  if (!h.has("kind") || h["kind"].string() != kKind) {
    h.fail(std::string("not an invariance sweep: its first line has no \"kind\": \"") + kKind +
           "\"");
  }
  s.version = static_cast<int>(h["version"].integer(1, 1 << 20));
  if (s.version != kVersion) {
    h["version"].fail("version " + std::to_string(s.version) + " is newer than this reader's " +
                      std::to_string(kVersion) + ": update repro-audit");
  }
  s.source = h["source"].nonempty_string();
  s.model = h["model"].string();
  s.mode = h["mode"].string();
  s.device = h["device"].string();
  s.dtype = h["dtype"].string();
  s.batch_dim = static_cast<int>(h["batch_dim"].integer(0, 63));
  s.sample_shape = read_shape(h["sample_shape"]);
  s.output_shape = read_shape(h["output_shape"]);
  if (!h["control"].is_null()) {
    const Field c = h["control"];
    s.control = InvarianceControl{static_cast<int>(c["op_index"].integer(0, 1 << 30)),
                                  c["op"].nonempty_string(), c["module"].string()};
  }
}

// The sweep's own consistency: a reference of the anchor alone, a control op among its ops.
void check_sweep(const InvarianceSweep& s, const std::string& source) {
  const ProbeConfig& ref = s.reference.config;
  if (ref.batch_size != 1 || ref.control) {
    throw InputError(source + ":2: the reference probe must be the anchor alone (batch_size 1, " +
                     "control false)");
  }
  if (s.control && static_cast<std::size_t>(s.control->op_index) >= s.reference.ops.size()) {
    throw InputError(
        source + ":1: field 'control.op_index': " + std::to_string(s.control->op_index) +
        " is past the reference probe's " + std::to_string(s.reference.ops.size()) + " op(s)");
  }
}

}  // namespace

void write_invariance_sweep(const std::filesystem::path& file, const InvarianceSweep& sweep) {
  std::string text =
      sweep_header_json(sweep).dump() + "\n" + sweep_probe_json(sweep.reference).dump() + "\n";
  for (const InvarianceProbe& p : sweep.probes) text += sweep_probe_json(p).dump() + "\n";
  text += json{{"end", {{"probes", sweep.probes.size()}}}}.dump() + "\n";
  write_file_atomic(file, text);
}

InvarianceSweep read_invariance_sweep(const std::filesystem::path& file) {
  const std::string source = file.string();
  const std::string text = read_file(file, kMaxSweepBytes, "an invariance sweep");
  InvarianceSweep sweep;
  std::size_t line_no = 0, start = 0;
  bool ended = false;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line(text.data() + start,
                                (end == std::string::npos ? text.size() : end) - start);
    start = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    if (ended) throw InputError(source + ":" + std::to_string(line_no) + ": a line after the end");
    const json rec = formats::parse_json_text(line, source, line_no);
    const Field f(rec, RecordLocation{&source, line_no});
    f.expect_object();
    if (line_no == 1) {
      read_header(f, sweep);
    } else if (f.has("end")) {
      const std::size_t promised = static_cast<std::size_t>(f["end"]["probes"].count());
      if (line_no == 2 || promised != sweep.probes.size()) {
        f["end"]["probes"].fail("the end promises " + std::to_string(promised) +
                                " probe(s) after the reference; the file holds " +
                                std::to_string(line_no == 2 ? 0 : sweep.probes.size()) +
                                (line_no == 2 ? " and no reference" : ""));
      }
      ended = true;
    } else {
      (line_no == 2 ? sweep.reference : sweep.probes.emplace_back()) = read_probe(f);
    }
  }
  if (line_no == 0) throw InputError(source + ": empty, not an invariance sweep");
  if (!ended) {
    throw InputError(source + ": no end line after " + std::to_string(line_no) +
                     " line(s): the sweep did not finish (killed, or still running)");
  }
  check_sweep(sweep, source);
  return sweep;
}

}  // namespace ra::trace
