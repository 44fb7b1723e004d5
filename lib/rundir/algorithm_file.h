#pragma once
// Pinned algorithms as a file: tune once, pin for every run (docs/determinism.md, "Autotune once,
// pin for every run"). `run --save-algorithms FILE` writes the algorithms a run used, per
// convolution geometry and direction, with the GPU and library versions they were chosen on;
// `run --pin-algorithms FILE` (such a file, or any trace: its header's ledger) makes every run
// run exactly those (audit/pinned_algorithms.h). cuDNN's choice depends on the GPU model and the
// library versions, so a file made on another GPU or version is refused, naming what differs.
//
// The file (JSON, docs/trace-format.md "Algorithm files"):
//   {"format": "repro-audit algorithms", "version": 1,
//    "made_from": {"spec": NAME, "spec_digest": HEX, "audit_id": ID, "run": 0},
//    "gpu": {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "cudnn": "9.19.0",
//            "cublas": "13.1.0"},
//    "algorithms": [ledger entries, as in a trace header]}
// Only the convolutions' entries (forward, backward_data, backward_filter) are pinned: cuBLAS and
// the custom kernels follow the kernel mode and have nothing to choose. This is the format alone:
// what the pins of a file are for a spec's runs is the audit's (audit/pinned_algorithms.h).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"

namespace ra::rundir {

inline constexpr const char* kAlgorithmFileFormat = "repro-audit algorithms";
inline constexpr int kAlgorithmFileVersion = 1;

// The GPU facts a file's algorithms hold for: a cuDNN choice made under other ones may not be
// available, or not the same, here.
inline constexpr const char* kPinnedGpuKeys[] = {"gpu", "compute_capability", "cudnn", "cublas"};

struct AlgorithmFile {
  nlohmann::json gpu = nlohmann::json::object();        // the kPinnedGpuKeys of the run's GPU
  nlohmann::json algorithms = nlohmann::json::array();  // ledger entries
  nlohmann::json made_from = nlohmann::json::object();  // spec, spec_digest, audit_id, run
};

// Whether a ledger entry is a convolution's (layer "conv ...", direction forward, backward_data
// or backward_filter): the entries a file pins.
bool is_convolution_entry(const nlohmann::json& entry);

// The file of one run, from its trace header. InputError when the run has no algorithm to pin:
// it ran on the CPU (one algorithm per op and instruction set) or its ledger names no
// convolution.
AlgorithmFile algorithm_file_of(const trace::TraceHeader& run);
nlohmann::json to_json(const AlgorithmFile& file);
// Written whole or not at all (core/atomic_file.h).
void write_algorithm_file(const std::filesystem::path& path, const AlgorithmFile& file);

// Reads an algorithm file, or a trace (its header's ledger and GPU): InputError naming the file
// and what is wrong (malformed JSON, another format or version, an entry without its fields, a
// trace of a CPU run).
AlgorithmFile read_algorithm_file(const std::filesystem::path& path);

// The kPinnedGpuKeys whose values differ between the file and this machine's GPU (`here`:
// train::gpu_fingerprint()), each "gpu: \"A\" in the file, \"B\" here".
std::vector<std::string> gpu_mismatches(const AlgorithmFile& file, const nlohmann::json& here);

}  // namespace ra::rundir
