#pragma once
// Deterministic autotune of an audit: on a GPU, in deterministic mode, run 0 times cuDNN's
// deterministic candidates for each convolution geometry and direction (cudnnFind on the op's own
// operands, as autotune does) and runs the fastest; its choices are saved as the audit's pin file
// (DIR/algorithms.json: rundir/audit_folder.h, kPinFileName; the format of --save-algorithms) and
// every other run is pinned to them. So all runs run the same algorithms, and deterministic ones:
// autotune's speed with bitwise identity across runs. The ledger entries of those choices say
// chosen_by "deterministic-autotune", in run 0 and in the pinned runs (backend/algorithm_pins.h).
//
// Where it does not apply, deterministic mode keeps cuDNN's heuristic choice, which needs no run
// 0 (algorithm_policy.h): `--pin-algorithms` (the user pinned), sharded audits (no shard sees run
// 0's choice before it starts), other modes (autotune chooses per run; nondeterministic keeps its
// atomic algorithms), CPU runs (nothing to choose). If run 0 leaves no algorithms to pin (it
// failed before its ledger was written), the other runs also take the heuristic's, and their
// ledgers say so.
#include <filesystem>
#include <memory>
#include <string>

#include "audit/audit_options.h"
#include "backend/algorithm_pins.h"
#include "rundir/algorithm_file.h"
#include "spec/spec.h"

namespace ra::audit {

// Whether the audit tunes in run 0 and pins the others: deterministic mode (--mode, else the
// spec's; an op the spec sets nondeterministic keeps its algorithm), the manifest's backend
// "cuda", no --pin-algorithms, not a shard.
bool uses_deterministic_autotune(const spec::ExperimentSpec& spec, const AuditOptions& o,
                                 const std::string& backend);

// Run 0's: nothing pinned, deterministic candidates timed.
std::shared_ptr<const backend::AlgorithmPins> tuning_pins();

// Every other run's: the convolution algorithms run 0 tuned (its file's entries chosen_by
// "deterministic-autotune"), pinned with that label; a convolution run 0 did not tune (an op the
// spec sets nondeterministic) is chosen by its mode, as in run 0. Named by `source` in messages.
std::shared_ptr<const backend::AlgorithmPins> tuned_pins(const rundir::AlgorithmFile& run0,
                                                         const std::string& source);

// Reads run 0's algorithms from its trace and writes them to DIR/algorithms.json; the pins of the
// other runs, or null when run 0's trace holds no algorithm to pin (see above).
std::shared_ptr<const backend::AlgorithmPins> save_tuned_pins(
    const std::filesystem::path& run0_trace, const std::filesystem::path& audit_dir);

}  // namespace ra::audit
