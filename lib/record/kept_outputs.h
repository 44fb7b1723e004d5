#pragma once
// The outputs of nondeterministic ops, kept by an audit's runs while they record their ops
// (record/op_recorder.h), for the magnitude of a root cause (audit/op_replay.h): a racing
// reduction has so many possible outcomes that a run's own seldom reappears when the op is
// executed again, so the runs keep the values they made, in memory, up to a budget per run (the
// first steps of the window first, which is where races first show). Thread-safe: runs of one
// audit keep into one store from several job threads.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "core/digest.h"

namespace ra::record {

class KeptOutputs {
 public:
  using Bytes = std::vector<unsigned char>;
  struct Outputs {
    std::vector<Bytes> bytes;   // each output's, in the record's order
    std::vector<DType> dtypes;  // of its elements
  };
  explicit KeptOutputs(std::size_t bytes_per_run) : budget_(bytes_per_run) {}

  // Keeps the outputs of record `index` of `step` of run `run` (its audit run number); false,
  // keeping nothing, once the run's budget would be exceeded (and for every later call).
  bool keep(int run, std::int64_t step, std::size_t index, Outputs outputs);
  std::optional<Outputs> find(int run, std::int64_t step, std::size_t index) const;
  // The bytes kept for run `run` so far.
  std::size_t bytes_kept(int run) const;

 private:
  using Key = std::tuple<int, std::int64_t, std::size_t>;
  mutable std::mutex mutex_;
  std::size_t budget_;
  std::map<Key, Outputs> outputs_;
  std::map<int, std::size_t> used_;  // bytes kept per run
  std::map<int, bool> full_;         // runs whose budget ran out
};

}  // namespace ra::record
