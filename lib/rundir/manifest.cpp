#include "rundir/manifest.h"

#include <cstdio>
#include <ctime>
#include <random>
#include <set>

#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"
#include "formats/json_text.h"
#include "rundir/shard.h"
#include "spec/limits.h"

namespace ra::rundir {
namespace {

using nlohmann::json;

json seeds_json(const PlannedSeeds& s) {
  json j{{"init", s.init}, {"data", s.data}, {"dropout", s.dropout}};
  if (s.augment) j["augment"] = *s.augment;  // only where --vary augment gave it its own
  return j;
}

// Reads fields of one JSON object, naming the source and the field in every error.
class FieldReader {
 public:
  FieldReader(const json& object, std::string source, std::string where)
      : object_(object), source_(std::move(source)), where_(std::move(where)) {
    if (!object_.is_object()) fail(where_.empty() ? "the manifest" : where_, "a JSON object");
  }

  template <class T>
  T get(const char* key, const char* expected) const {
    const std::string path = where_.empty() ? key : where_ + "." + key;
    if (!object_.contains(key)) {
      throw InputError(source_ + ": missing field '" + path + "'");
    }
    const json& value = object_.at(key);
    try {
      if constexpr (std::is_same_v<T, std::string>) {
        if (!value.is_string()) fail(path, expected);
      } else if constexpr (std::is_same_v<T, json>) {
      } else if constexpr (std::is_same_v<T, std::uint64_t>) {
        if (!value.is_number_unsigned()) fail(path, expected);
      } else if constexpr (std::is_integral_v<T>) {
        // Whole and in T's range: nlohmann's get<T> would wrap 4294967296 to 0 silently.
        if (!value.is_number_integer()) fail(path, expected);
        const bool fits =
            value.is_number_unsigned()
                ? value.get<std::uint64_t>() <=
                      static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                : value.get<std::int64_t>() >= std::int64_t{std::numeric_limits<T>::min()} &&
                      value.get<std::int64_t>() <= std::int64_t{std::numeric_limits<T>::max()};
        if (!fits) {
          throw InputError(source_ + ": field '" + path + "' is " + value.dump() +
                           ", out of range for " + expected);
        }
      }
      return value.get<T>();
    } catch (const json::exception&) {
      fail(path, expected);
    }
  }
  const json& object(const char* key) const {
    const std::string path = where_.empty() ? key : where_ + "." + key;
    if (!object_.contains(key)) throw InputError(source_ + ": missing field '" + path + "'");
    return object_.at(key);
  }
  std::string path(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

  [[noreturn]] void fail(const std::string& path, const char* expected) const {
    throw InputError(source_ + ": field '" + path + "' must be " + expected);
  }

 private:
  const json& object_;
  std::string source_;
  std::string where_;
};

std::string runs_line(const std::vector<PlannedRun>& runs) {
  std::string out;
  for (const PlannedRun& r : runs) {
    if (!out.empty()) out += ", ";
    out += std::to_string(r.index) + " " + r.group + " (init " + std::to_string(r.seeds.init) +
           ", data " + std::to_string(r.seeds.data) + ", dropout " +
           std::to_string(r.seeds.dropout) +
           (r.seeds.augment ? ", augment " + std::to_string(*r.seeds.augment) : "") + ")";
  }
  return out;
}

bool same_runs(const std::vector<PlannedRun>& a, const std::vector<PlannedRun>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].index != b[i].index || a[i].group != b[i].group ||
        a[i].seeds.init != b[i].seeds.init || a[i].seeds.data != b[i].seeds.data ||
        a[i].seeds.dropout != b[i].seeds.dropout || a[i].seeds.augment != b[i].seeds.augment)
      return false;
  }
  return true;
}

// The spec's train.epochs, as text ("?" where the manifest's spec has none: an exec audit's).
std::string epochs_text(const json& spec) {
  if (!spec.is_object() || !spec.contains("train") || !spec["train"].is_object()) return "?";
  return spec["train"].value("epochs", json()).dump();
}

}  // namespace

std::string new_audit_id() {
  std::random_device entropy;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    char word[9];
    std::snprintf(word, sizeof word, "%08x", static_cast<unsigned>(entropy()));
    id += word;
  }
  return id;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string run_name(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "run-%03d", index);
  return name;
}

std::string trace_name(int index) {
  return run_name(index) + ".trace.jsonl";
}

json to_json(const AuditManifest& m) {
  json runs = json::array();
  for (const PlannedRun& r : m.runs) {
    runs.push_back({{"run", r.index},
                    {"trace", trace_name(r.index)},
                    {"snapshots", run_name(r.index)},
                    {"seed_group", r.group},
                    {"seeds", seeds_json(r.seeds)}});
  }
  json out = {{"record", "repro-audit manifest"},
              {"format_version", m.format_version},
              {"audit_id", m.audit_id},
              {"tool_version", m.tool_version},
              {"created", m.created},
              {"spec", m.spec},
              {"spec_digest", m.spec_digest},
              {"device", m.device},
              {"backend", m.backend},
              {"threads", m.threads},
              {"determinism", m.determinism},
              {"seed_policy", m.seed_policy},
              {"snapshots", m.snapshots},
              {"fault", m.fault},
              {"trace_ops", m.trace_ops.empty() ? json(nullptr) : json(m.trace_ops)},
              {"interrupt_at", m.interrupt_at},
              {"expect", m.expect},
              {"algorithm_pins", m.algorithm_pins},
              {"runtime", m.runtime},
              {"runs", runs},
              {"shards", m.shards},
              {"created_by", m.created_by},
              {"report_files", m.report_files}};
  // Only when set: the manifests of audits recording every step per tensor read as before.
  if (!m.tensor_digests.empty()) out["tensor_digests"] = m.tensor_digests;
  return out;
}

namespace {

// The fields newer tools added, each absent in older manifests (read as the default the comment
// says).
void read_added_fields(const json& j, const FieldReader& top, AuditManifest& m) {
  // Absent in manifests of audits made before op records: none.
  if (j.contains("trace_ops") && !j["trace_ops"].is_null()) {
    if (!j["trace_ops"].is_string()) top.fail("trace_ops", "null or a step window string");
    m.trace_ops = j["trace_ops"].get<std::string>();
  }
  // Absent in manifests of audits made before levels of detail: every step per tensor.
  if (j.contains("tensor_digests") && !j["tensor_digests"].is_null()) {
    if (!j["tensor_digests"].is_string()) top.fail("tensor_digests", "null or a plan string");
    m.tensor_digests = j["tensor_digests"].get<std::string>();
  }
  // Absent in manifests of audits made before resume checks (docs/resume.md): none.
  if (j.contains("interrupt_at")) {
    const json& steps = j["interrupt_at"];
    if (!steps.is_array()) top.fail("interrupt_at", "an array of steps");
    for (const json& step : steps) {
      if (!step.is_number_integer() || step.get<std::int64_t>() < 1) {
        top.fail("interrupt_at", "an array of steps (integers >= 1)");
      }
      m.interrupt_at.push_back(step.get<std::int64_t>());
    }
  }
  // Absent in manifests of audits made before pinned algorithms: none.
  if (j.contains("algorithm_pins") && !j["algorithm_pins"].is_null()) {
    const json& pins = j["algorithm_pins"];
    if (!pins.is_object() || !pins.contains("pins") || !pins["pins"].is_array())
      top.fail("algorithm_pins", "null or an object with a 'pins' array");
    m.algorithm_pins = pins;
  }
  // Absent in manifests of audits made before it was recorded: not checked.
  if (j.contains("runtime") && !j["runtime"].is_null()) {
    if (!j["runtime"].is_object()) top.fail("runtime", "null or an object");
    m.runtime = j["runtime"];
  }
  // Absent in manifests of audits made before shards: one process.
  if (j.contains("shards")) {
    m.shards = top.get<int>("shards", "an integer");
    if (m.shards < 0) top.fail("shards", "0 (one process) or the number of shards");
  }
  if (j.contains("created_by")) m.created_by = top.get<std::string>("created_by", "a string");
  // Absent in manifests of audits made before the expectation was the audit's: exec expected
  // identity, run identity when every run was fully deterministic.
  m.expect = m.device == "exec" ? kExpectIdentical : kExpectWhenDeterministic;
  if (j.contains("expect")) {
    m.expect = top.get<std::string>("expect", "a string");
    if (m.expect != kExpectIdentical && m.expect != kExpectAny &&
        m.expect != kExpectWhenDeterministic) {
      top.fail("expect", "\"identical\", \"any\" or \"when-deterministic\"");
    }
  }
}

std::vector<PlannedRun> read_planned_runs(const FieldReader& top, const std::string& source) {
  std::vector<PlannedRun> planned;
  const json& runs = top.object("runs");
  if (!runs.is_array()) top.fail("runs", "an array");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string where = "runs[" + std::to_string(i) + "]";
    const FieldReader run(runs[i], source, where);
    PlannedRun r;
    r.index = run.get<int>("run", "an integer");
    if (r.index != static_cast<int>(i)) {
      throw InputError(source + ": field '" + where + ".run' is " + std::to_string(r.index) +
                       ", expected " + std::to_string(i) + " (runs are numbered in order)");
    }
    r.group = run.get<std::string>("seed_group", "a string");
    const FieldReader seeds(run.object("seeds"), source, where + ".seeds");
    r.seeds.init = seeds.get<std::uint64_t>("init", "an unsigned integer");
    r.seeds.data = seeds.get<std::uint64_t>("data", "an unsigned integer");
    r.seeds.dropout = seeds.get<std::uint64_t>("dropout", "an unsigned integer");
    if (run.object("seeds").contains("augment")) {
      r.seeds.augment = seeds.get<std::uint64_t>("augment", "an unsigned integer");
    }
    planned.push_back(r);
  }
  return planned;
}

// The documented limits (docs/trace-format.md, the manifest): every loop over shards and every
// thread count stays within them, whatever a crafted manifest says.
void check_limits(const AuditManifest& m, const FieldReader& top, const std::string& source) {
  if (m.runs.empty()) top.fail("runs", "a non-empty array");
  if (m.runs.size() > static_cast<std::size_t>(kMaxPlannedRuns)) {
    top.fail("runs", "an array of at most 20000 planned runs (--runs 10000, --seeds both)");
  }
  if (m.threads < 1 || m.threads > spec::kMaxThreads) top.fail("threads", "an integer 1..1024");
  if (m.shards > kMaxShards || m.shards > static_cast<int>(m.runs.size())) {
    throw InputError(source + ": field 'shards' is " + std::to_string(m.shards) + ": at most " +
                     std::to_string(kMaxShards) + " and at most the planned runs (" +
                     std::to_string(m.runs.size()) + ")");
  }
}

std::vector<std::string> read_report_files(const FieldReader& top) {
  std::vector<std::string> out;
  const json& reports = top.object("report_files");
  if (!reports.is_array()) top.fail("report_files", "an array of file names");
  for (const json& name : reports) {
    // Plain names inside the folder only: --overwrite removes them, so nothing may point out.
    if (!name.is_string() || name.get<std::string>().empty() ||
        name.get<std::string>().find('/') != std::string::npos || name == "." || name == "..") {
      top.fail("report_files", "an array of file names inside the folder");
    }
    out.push_back(name.get<std::string>());
  }
  return out;
}

}  // namespace

AuditManifest manifest_from_json(const json& j, const std::string& source) {
  const FieldReader top(j, source, "");
  if (top.get<std::string>("record", "a string") != "repro-audit manifest") {
    throw InputError(source + ": not a repro-audit manifest (field 'record')");
  }
  AuditManifest m;
  m.format_version = top.get<int>("format_version", "an integer");
  if (m.format_version != kManifestFormatVersion) {
    throw InputError(source + ": manifest format version " + std::to_string(m.format_version) +
                     "; this tool reads version " + std::to_string(kManifestFormatVersion));
  }
  m.audit_id = top.get<std::string>("audit_id", "a string");
  if (!trace::is_audit_id(m.audit_id)) top.fail("audit_id", "32 lowercase hex digits");
  m.tool_version = top.get<std::string>("tool_version", "a string");
  m.created = top.get<std::string>("created", "a string");
  m.spec = top.object("spec");
  if (!m.spec.is_object()) top.fail("spec", "a JSON object");
  m.spec_digest = top.get<std::string>("spec_digest", "a string");
  m.device = top.get<std::string>("device", "a string");
  m.backend = top.get<std::string>("backend", "a string");
  m.threads = top.get<int>("threads", "an integer");
  m.determinism = top.object("determinism");
  if (!m.determinism.is_object()) top.fail("determinism", "a JSON object");
  m.seed_policy = top.get<std::string>("seed_policy", "a string");
  m.snapshots = top.object("snapshots");
  if (!m.snapshots.is_object()) top.fail("snapshots", "a JSON object");
  m.fault = top.object("fault");
  if (!m.fault.is_null() && !m.fault.is_object()) top.fail("fault", "null or a JSON object");
  read_added_fields(j, top, m);
  m.runs = read_planned_runs(top, source);
  check_limits(m, top, source);
  m.report_files = read_report_files(top);
  return m;
}

void write_manifest(const std::filesystem::path& dir, const AuditManifest& manifest) {
  write_file_atomic(dir / kManifestName, to_json(manifest).dump(2) + "\n");
}

bool create_manifest(const std::filesystem::path& dir, const AuditManifest& manifest) {
  AtomicFileWriter writer(dir / kManifestName);
  writer.append(to_json(manifest).dump(2) + "\n");
  return writer.commit_new();
}

AuditManifest read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kManifestName;
  // A manifest holds the spec and the planned runs: a few KB. 16 MiB bounds a damaged one. The
  // strict parser names file, line and column (duplicate keys, numbers out of range, depth).
  constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{16} << 20;
  const std::string text = read_file(path, kMaxManifestBytes, "a manifest");
  return manifest_from_json(formats::parse_json_text(text, path.string()), path.string());
}

std::optional<bool> expectation_of(const AuditManifest& m) {
  if (m.expect == kExpectIdentical) return true;
  if (m.expect == kExpectAny) return false;
  return std::nullopt;
}

void set_expectation(AuditManifest& m, std::optional<bool> given, const char* default_expect) {
  m.expect_given = given.has_value();
  m.expect = !given ? default_expect : *given ? kExpectIdentical : kExpectAny;
}

std::vector<std::string> manifest_differences(const AuditManifest& a, const AuditManifest& b) {
  std::vector<std::string> out;
  auto differ = [&](const std::string& field, const std::string& in_folder,
                    const std::string& requested) {
    if (in_folder != requested) {
      out.push_back(field + ": " + in_folder + " in the folder, " + requested + " requested");
    }
  };
  differ("spec digest", a.spec_digest, b.spec_digest);
  if (a.spec_digest != b.spec_digest &&
      a.spec.value("name", json()) != b.spec.value("name", json()))
    differ("spec name", a.spec.value("name", json()).dump(), b.spec.value("name", json()).dump());
  // The one spec field a command line changes (run --epochs): said, so the digest is not alone.
  if (a.spec_digest != b.spec_digest) {
    differ("train.epochs (--epochs)", epochs_text(a.spec), epochs_text(b.spec));
  }
  differ("device", a.device, b.device);
  differ("backend", a.backend, b.backend);
  differ("threads", std::to_string(a.threads), std::to_string(b.threads));
  differ("determinism", a.determinism.dump(), b.determinism.dump());
  differ("seeds", a.seed_policy, b.seed_policy);
  if (a.runs.size() != b.runs.size()) {
    differ("runs", std::to_string(a.runs.size()) + " planned",
           std::to_string(b.runs.size()) + " planned");
  } else if (!same_runs(a.runs, b.runs)) {
    differ("planned runs (index, seed group, seeds)", runs_line(a.runs), runs_line(b.runs));
  }
  differ("snapshot options", a.snapshots.dump(), b.snapshots.dump());
  differ("fault injection", a.fault.dump(), b.fault.dump());
  // The pins, not the file's name, decide what ran: a name is said only to tell them apart.
  const auto pins_text = [](const json& p) {
    if (p.is_null()) return std::string("none");
    return std::to_string(p["pins"].size()) + " from " +
           formats::json_excerpt(p.value("source", json()));
  };
  const auto pins = [](const json& p) { return p.is_object() ? p.value("pins", json()) : json(); };
  if (pins(a.algorithm_pins) != pins(b.algorithm_pins)) {
    out.push_back("pinned algorithms: " + pins_text(a.algorithm_pins) + " in the folder, " +
                  pins_text(b.algorithm_pins) + " requested" +
                  (pins_text(a.algorithm_pins) == pins_text(b.algorithm_pins)
                       ? " (the same file, other algorithms)"
                       : ""));
  }
  differ("--trace-ops window", a.trace_ops.empty() ? "none" : a.trace_ops,
         b.trace_ops.empty() ? "none" : b.trace_ops);
  differ("--tensor-digests", a.tensor_digests.empty() ? "all" : a.tensor_digests,
         b.tensor_digests.empty() ? "all" : b.tensor_digests);
  const auto steps_text = [](const std::vector<std::int64_t>& steps) {
    return steps.empty() ? std::string("none") : json(steps).dump();
  };
  differ("--interrupt-at steps", steps_text(a.interrupt_at), steps_text(b.interrupt_at));
  // Decided once: another --expect would make the folder's verdict another command's.
  if (b.expect_given) differ("expectation (--expect)", a.expect, b.expect);
  differ("tool version", a.tool_version, b.tool_version);
  // What this machine would run differently (an older manifest recorded none: not compared).
  if (a.runtime.is_object() && b.runtime.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : a.runtime.items()) keys.insert(key);
    for (const auto& [key, value] : b.runtime.items()) keys.insert(key);
    for (const std::string& key : keys) {
      const json here = b.runtime.value(key, json()), there = a.runtime.value(key, json());
      if (here != there) {
        out.push_back("runtime " + key + ": " + there.dump() + " in the folder, " + here.dump() +
                      " on this machine (runs made under each would differ for that alone)");
      }
    }
  }
  return out;
}

}  // namespace ra::rundir
