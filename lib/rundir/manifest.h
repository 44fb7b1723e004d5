#pragma once
// The manifest of an audit folder (audit.json, docs/trace-format.md "The audit folder"): which
// audit the folder holds, and everything that decides the bits of its runs. It is written
// atomically before the first run trains; every trace and snapshot of the audit carries its
// audit id, so `compare DIR` reads exactly the manifest's runs and `run --resume` can tell whether
// the audit it is asked to finish is the one in the folder.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"

namespace ra::rundir {

// The most runs a manifest may plan: --runs 10000 with --seeds both.
inline constexpr int kMaxPlannedRuns = 20000;

inline constexpr int kManifestFormatVersion = 1;

inline constexpr const char* kExpectIdentical = "identical";
inline constexpr const char* kExpectAny = "any";
inline constexpr const char* kExpectWhenDeterministic = "when-deterministic";

// The seeds of a planned run's independent random streams, as the manifest records them: what
// the run trains with (train::RunSeeds, which the audit makes of them) and its trace header says.
struct PlannedSeeds {
  std::uint64_t init = 0;                // parameter initialisation
  std::uint64_t data = 0;                // sample order (shuffle)
  std::uint64_t dropout = 0;             // dropout masks
  std::optional<std::uint64_t> augment;  // data augmentation; none: the data seed's
  static PlannedSeeds all(std::uint64_t seed) {
    return PlannedSeeds{seed, seed, seed, std::nullopt};
  }
};

// One planned run: its index (run-NNN), seed group and the seeds of its random streams.
struct PlannedRun {
  int index = 0;
  std::string group;  // "same", "different" or "perturbed"
  PlannedSeeds seeds;
};

struct AuditManifest {
  int format_version = kManifestFormatVersion;
  std::string audit_id;  // 32 lowercase hex digits (128 random bits)
  std::string tool_version;
  std::string created;  // UTC, "2024-05-01T12:34:56Z"
  // What decides the bits of the runs (all compared by --resume):
  nlohmann::json spec;  // canonical resolved spec (spec::to_json), --device already applied
  std::string spec_digest;
  std::string device;          // the spec's device: auto, cpu, cuda
  std::string backend;         // what the device resolved to on the machine that started it
  int threads = 0;             // worker threads per run (resolved: never 0)
  nlohmann::json determinism;  // the policy the runs use: {"mode": ..., "ops": {...}}
  std::string seed_policy;     // same, different, both, all
  nlohmann::json snapshots;    // {"epochs", "every_steps", "batches"}
  nlohmann::json fault;        // the test-only fault injection, or null
  std::string trace_ops;       // the --trace-ops window ("0:50", "all"), "" without op records
  // The --tensor-digests plan ("every:1000,5000:5100"), "" when every step is recorded per tensor.
  std::string tensor_digests;
  std::vector<std::int64_t> interrupt_at;  // --interrupt-at's steps, ascending (docs/resume.md)
  // What the verdict expects, decided once for the audit (--expect, else the command's default):
  // "identical" (exit 1 unless the same-seed runs are bitwise identical), "any" (never exit 1),
  // or "when-deterministic" (identical when every run ran every reducing op deterministic: run's
  // default). Every reader of the folder applies it (compare DIR, the report of run and exec).
  // Absent in older manifests: "identical" for exec's (device "exec"), else when-deterministic.
  std::string expect = kExpectWhenDeterministic;
  // Whether `expect` was asked for (--expect) in a requested manifest: only then does it differ
  // from the folder's (--resume, a joining shard); without --expect the folder's applies.
  bool expect_given = false;
  // --pin-algorithms: {"source": FILE, "pins": [{"layer", "direction", "algorithm"}]}, or null.
  nlohmann::json algorithm_pins;
  // What decides the runs' bits that is chosen where they run, not by the spec or the options:
  // {"cpu_gemm_kernel"} of a CPU audit (the instruction set, REPRO_AUDIT_ISA), {"gpu",
  // "compute_capability", "cuda", "cudnn", "cublas"} of a GPU audit; null in older manifests (not
  // checked). --resume and joining shards refuse a machine where it differs.
  nlohmann::json runtime;
  std::vector<PlannedRun> runs;
  // The number of shards the runs are spread over (rundir/shard.h), 0 for an audit in one process.
  // Shards of one audit must agree on it; `run --resume` in one process may finish any audit.
  int shards = 0;
  // Provenance: who wrote the manifest ("shard 2/4, pid 1234 on node-7"; "" in one process).
  std::string created_by;
  // Not part of the audit's identity: report files (names inside the folder) that `run --json`
  // wrote there, so that --overwrite may remove them as its own.
  std::vector<std::string> report_files;
};

// The manifest's file in the audit folder.
inline constexpr const char* kManifestName = "audit.json";

// The names the manifest gives a run's files in the folder (rundir/audit_folder.h reads them).
std::string run_name(int index);    // "run-003" (the run's snapshot folder)
std::string trace_name(int index);  // "run-003.trace.jsonl"

// 128 random bits as 32 lowercase hex digits (std::random_device: the kernel's entropy pool).
std::string new_audit_id();
// The current time, UTC, ISO 8601 to the second.
std::string utc_now();

nlohmann::json to_json(const AuditManifest& manifest);
// InputError naming `source` and the field for a manifest that is not one (a JSON value of the
// wrong kind, a missing field, a format version this tool does not read, a malformed audit id).
AuditManifest manifest_from_json(const nlohmann::json& json, const std::string& source);

// `dir`/audit.json, written atomically.
void write_manifest(const std::filesystem::path& dir, const AuditManifest& manifest);
// InputError naming the file when it is unreadable, not JSON or not a manifest.
AuditManifest read_manifest(const std::filesystem::path& dir);
// Writes `dir`/audit.json only when there is none yet (atomic, like write_manifest): of processes
// racing to create it, exactly one gets true; the others find the winner's whole manifest.
bool create_manifest(const std::filesystem::path& dir, const AuditManifest& manifest);

// The expectation of a manifest as compare takes it: true (identity), false (any), or none (from
// the traces: identity when every run was fully deterministic).
std::optional<bool> expectation_of(const AuditManifest& manifest);
// `expect` of a requested manifest: the option's value (parse_expect's), else `default_expect`.
void set_expectation(AuditManifest& manifest, std::optional<bool> given,
                     const char* default_expect);

// What differs between the audit in a folder and the one requested, one line per field in the
// user's words ("runs: 3 planned in the folder, 4 requested"); empty when the same audit.
// Identity, provenance and report files are not compared.
std::vector<std::string> manifest_differences(const AuditManifest& in_folder,
                                              const AuditManifest& requested);

}  // namespace ra::rundir
