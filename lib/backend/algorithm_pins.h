#pragma once
// Pinned algorithms: for convolution geometries and directions, the library algorithm a backend
// runs instead of choosing one (autotune) or taking its mode's default. Two users:
// - `run --pin-algorithms FILE` (audit/algorithm_file.h): tune once, pin for every run, so runs
//   get autotune's algorithms without autotune's run-to-run choice;
// - the replay that measures a root cause (audit/op_replay.h): a run is replayed with the
//   algorithms its own ledger names, and the root-cause op is executed with each run's.
// Pure data (no device). The CPU backend has one algorithm per op and instruction set, nothing
// to pin, and ignores them.
#include <string>
#include <vector>

namespace ra::backend {

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
  // "pinned-ledger" for a replay.
  std::string chosen_by = "pinned-file";
  // Whether a geometry and direction without a pin is an error (--pin-algorithms: the file must
  // cover the model) or chosen as the mode chooses (a replay of a run whose ledger lacks it).
  bool complete = true;

  // The pin of a geometry and direction, or null.
  const AlgorithmPin* find(const std::string& layer, const std::string& direction) const {
    for (const AlgorithmPin& p : pins) {
      if (p.layer == layer && p.direction == direction) return &p;
    }
    return nullptr;
  }
};

}  // namespace ra::backend
