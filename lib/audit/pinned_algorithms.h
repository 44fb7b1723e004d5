#pragma once
// The convolution algorithms runs are pinned to (docs/determinism.md, "Autotune once, pin for
// every run"): those of an algorithm file or trace (`run --pin-algorithms FILE`; the format:
// rundir/algorithm_file.h), checked against this machine's GPU and the spec's model before any
// run trains, and those of a run's ledger, for a replay of that run (audit/op_replay.h).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/algorithm_pins.h"
#include "rundir/algorithm_file.h"
#include "spec/spec.h"

namespace ra::audit {

// The convolution pins of the file (complete: a geometry it lacks is an error), named by `source`.
backend::AlgorithmPins pins_of(const rundir::AlgorithmFile& file, const std::string& source);
// The convolution pins of a run's ledger, for a replay of that run: chosen_by "pinned-ledger",
// not complete (what the ledger lacks is chosen as the mode chooses).
backend::AlgorithmPins ledger_pins(const nlohmann::json& ledger, const std::string& source);

// The convolution geometries and directions of the spec's model at its full batch size that
// `pins` does not cover, each "conv 128x1x28x28 k32 3x3 s1 p0 backward_filter": checked before
// any run trains (a partial last batch or the eval batch, if their geometries are missing, fail
// at their first call, naming the geometry).
std::vector<std::string> uncovered_convolutions(const backend::AlgorithmPins& pins,
                                                const spec::ExperimentSpec& spec);

// What `run --pin-algorithms FILE` pins for runs of `spec` on this machine (`gpu`:
// train::gpu_fingerprint()). InputError (exit 2) when the runs would train on the CPU, when FILE
// was made on another GPU model, compute capability, cuDNN or cuBLAS version (each difference
// named), or when it lacks a convolution of the spec's model (each named); RuntimeFailure (exit
// 3) when the spec asks for the GPU and none is usable.
backend::AlgorithmPins pins_for_run(const std::filesystem::path& file,
                                    const spec::ExperimentSpec& spec, const nlohmann::json& gpu);
// InputError when `run --save-algorithms` has nothing to save: the runs train on the CPU.
void check_algorithms_can_be_saved(const spec::ExperimentSpec& spec, const nlohmann::json& gpu);

}  // namespace ra::audit
