#pragma once
// Pinned algorithms: for convolution geometries and directions, the library algorithm a backend
// runs instead of choosing one (autotune) or taking its mode's default. Three users:
// - `run --pin-algorithms FILE` (rundir/algorithm_file.h): tune once, pin for every run, so runs
//   get autotune's algorithms without autotune's run-to-run choice;
// - the replay that measures a root cause (audit/op_replay.h): a run is replayed with the
//   algorithms its own ledger names, and the root-cause op is executed with each run's;
// - deterministic autotune (audit/deterministic_autotune.h): run 0 of a deterministic audit times
//   the deterministic candidates (tune_unpinned_deterministic), every other run pins its choices.
// Pure data (no device). The CPU backend has one algorithm per op and instruction set, nothing
// to pin, and ignores them.
#include <string>
#include <vector>

namespace ra::backend {

// The ledger's chosen_by of a deterministic autotune's choice, in run 0 and in the runs pinned to
// it.
inline constexpr const char* kDeterministicAutotune = "deterministic-autotune";

struct AlgorithmPin {
  std::string layer;      // the geometry key (backend/geometry_key.h), as the ledger keys it
  std::string direction;  // "forward", "backward_data", "backward_filter"
  std::string algorithm;  // as the ledger names it: "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1"
};

struct AlgorithmPins {
  std::vector<AlgorithmPin> pins;
  // Where they came from, for messages: "pins.json", "the ledger of run 2".
  std::string source;
  // What the ledger's "chosen_by" says of a pinned algorithm: "pinned-file" for --pin-algorithms,
  // "pinned-ledger" for a replay, "deterministic-autotune" for the runs pinned to run 0's tuning.
  std::string chosen_by = "pinned-file";
  // Whether a geometry and direction without a pin is an error (--pin-algorithms: the file must
  // cover the model) or chosen as the mode chooses (a replay of a run whose ledger lacks it).
  bool complete = true;
  // Deterministic autotune (run 0 of a deterministic audit on a GPU): a geometry and direction
  // without a pin is chosen, in deterministic mode, by timing cuDNN's deterministic candidates on
  // the op's own operands (cudnnFind, as autotune does) rather than by the heuristic; its ledger
  // entry says chosen_by "deterministic-autotune", and the audit pins every other run to these
  // choices (audit/deterministic_autotune.h). Other modes ignore it.
  bool tune_unpinned_deterministic = false;

  // The pin of a geometry and direction, or null.
  const AlgorithmPin* find(const std::string& layer, const std::string& direction) const {
    for (const AlgorithmPin& p : pins) {
      if (p.layer == layer && p.direction == direction) return &p;
    }
    return nullptr;
  }
};

}  // namespace ra::backend
