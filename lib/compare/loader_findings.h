#pragma once
// What the comparison finds about PyTorch runs' data loaders (compare/compare_loader_workers.cpp,
// docs/pytorch.md "Data loader workers"): streams workers share, and the advice where runs part
// at a batch.
#include <cstdint>
#include <string>
#include <vector>

namespace ra::compare {

// A random stream that two or more data-loader workers of one pass over the data started from in
// the same state (PyTorch traces that recorded their loader's workers): what they draw from it,
// random augmentations or samples, repeats across workers.
struct SharedWorkerStream {
  std::string stream;                // "dataset.rng", "numpy", ...
  std::vector<int> workers;          // every worker that shared it with another in some pass
  std::vector<int> runs;             // the runs in which it was shared
  std::int64_t passes = 0;           // passes in which it was shared (the most of any run)
  std::int64_t passes_recorded = 0;  // passes recorded (the most of any run)
  // The stream's starting state (the first worker's, first pass) differs between same-seed runs:
  // it is not seeded from the run's seed, so what it draws differs between runs too.
  bool differs_between_runs = false;
};
struct LoaderWorkerFindings {
  std::vector<int> runs_recorded;                  // runs whose trace recorded loader workers
  std::vector<SharedWorkerStream> shared_streams;  // by stream name
};

// PyTorch runs whose first divergence is a batch: the loader, not an op, is where they part, and
// op records (--trace-ops) cannot see into it. What the report advises instead.
struct LoaderAdvice {
  std::int64_t step = 0;
  std::string tensor;             // what differs first: "indices", "inputs" or "labels"
  bool indices_recorded = false;  // the runs recorded their batches' sample indices (indices=)
  bool workers_watched = false;   // the runs recorded their loader's workers (rec.watch_loader)
  // Streams the workers of a pass share that also start differently in each run.
  std::vector<std::string> shared_and_differing;
};

}  // namespace ra::compare
