#pragma once
// Digests taken inside the optimizer update, for the trace recorder, so that recording stays a
// small share of a training step. After every step the recorder digests each gradient, weight and
// optimizer state: read back from memory that is a pass over ~20 MB per step on the Keras convnet
// (1.2 M parameters x 4 bytes x weights, gradients and two Adadelta state tensors).
// The update already streams through exactly these tensors, so a backend can hash each 64 KiB
// chunk (core/digest.h) right after updating it, while the chunk is still in cache; the recorder
// then only combines chunk digests into tensor digests (digest_from_chunks): the same bits as
// digesting the tensors afterwards.
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/xxh3_portable.h"

namespace ra::optim {

// Where Ops::optimizer_update_digested writes the chunk digests of one parameter's tensors, as
// they are after the update: digest_chunk_count(count * sizeof(float)) entries each, in chunk
// order. s0 / s1 are null when the parameter has no such state.
struct ChunkDigestTargets {
  xxh3::Hash128* value = nullptr;
  xxh3::Hash128* grad = nullptr;
  xxh3::Hash128* s0 = nullptr;
  xxh3::Hash128* s1 = nullptr;
  // The backend adds the time it spent hashing, summed over its threads, in nanoseconds (the
  // recorder counts it as recording time).
  std::atomic<std::int64_t>* hash_nanoseconds = nullptr;
};

// One optimizer step's chunk digests of every parameter's tensors, reused from step to step (the
// optimizer sizes the vectors on the first step it fills, so later steps allocate nothing).
struct UpdateDigests {
  struct Param {
    std::vector<xxh3::Hash128> value, grad;  // value: after the update
    std::vector<xxh3::Hash128> state[2];     // per state kind, after the update; unused kinds empty
  };
  std::vector<Param> params;  // in the order of the step's parameter list
  // True when the last step's update digested every tensor; false when a backend could not fuse
  // the digests (the tensors must then be digested from memory).
  bool complete = false;
  std::atomic<std::int64_t> hash_nanoseconds{0};  // all steps so far
};

}  // namespace ra::optim
