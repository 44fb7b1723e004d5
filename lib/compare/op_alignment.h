#pragma once
// The op records of two programs at one step, aligned (docs/equivalence.md, "Aligning two
// programs' ops"): two implementations of one model (a manual LayerNorm and nn.LayerNorm, a fused
// op and its parts) run different op sequences, so records cannot be paired by position as
// repeated runs of one program are (compare_root_cause.cpp). Records pair up by where they ran
// and what they are, (layer, op), in a longest common subsequence of the two streams
// (compare/sequence_alignment.h); what is left between two aligned records is an unaligned
// stretch (ops only one program ran, or that each ran in its own way). Then, in stream order, the
// first place where the two part: an aligned op whose inputs agree and whose outputs do not, or
// an unaligned stretch whose result an aligned op reads and finds different.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace ra::compare {

// Records [a_begin, a_end) of program A and [b_begin, b_end) of program B. Aligned: as many of
// each, pairwise of one layer and op. Unaligned: the records between two aligned stretches (or
// before the first, after the last), either side possibly empty.
struct OpStretch {
  std::size_t a_begin = 0, a_end = 0, b_begin = 0, b_end = 0;
  bool aligned = false;
  std::size_t a_count() const { return a_end - a_begin; }
  std::size_t b_count() const { return b_end - b_begin; }
  friend bool operator==(const OpStretch&, const OpStretch&) = default;
};

// The two streams cut into stretches, in order, covering every record of each once. Records
// align by (layer, op) alone: an occurrence index in the key ("the 3rd aten.add in model.norm")
// would pair the wrong occurrences after one extra op of a name, where the subsequence keeps the
// pairing of those that follow (docs/equivalence.md says why).
std::vector<OpStretch> align_op_records(const std::vector<trace::OpRecord>& a,
                                        const std::vector<trace::OpRecord>& b);

// Where two programs part at a step, the first such place in the order the ops ran.
struct OpParting {
  enum class Kind {
    op,       // an aligned op read equal inputs and wrote different outputs: the op is where
    stretch,  // an aligned op read a value that differs, made by an unaligned stretch: there
    inputs,   // an aligned op read a value that differs and that no unaligned op made: the
              // step's inputs (batch, weights) differ, or the programs wire the op otherwise
  };
  Kind kind = Kind::op;
  // The aligned records: of the op (op), of the first op that read a value that differs (the
  // others).
  std::size_t a = 0, b = 0;
  // Positions in the records' outputs (op) or inputs (the others) whose digests differ; an input
  // or output one side has and the other lacks counts.
  std::vector<std::size_t> positions;
  std::optional<std::size_t> stretch;  // kind stretch: its index among the step's stretches
};

struct StepAlignment {
  std::int64_t step = 0;
  std::size_t a_records = 0, b_records = 0;
  std::size_t aligned = 0;           // aligned pairs
  std::vector<OpStretch> stretches;  // every stretch, aligned or not, in order
  std::optional<OpParting> parting;
  std::size_t unaligned() const;  // the unaligned stretches' count
};

StepAlignment align_step(const trace::StepRecord& a, const trace::StepRecord& b);
// The same of two sequences of ops at step `step`: two steps' records as the alignment reads them
// (compare/op_families.h: the engine's against PyTorch's).
StepAlignment align_ops(std::int64_t step, const std::vector<trace::OpRecord>& a,
                        const std::vector<trace::OpRecord>& b);

// "model.norm" or "model.norm, model.head": the layers of records [begin, end), in order of
// first appearance ("(none)" for an engine's batch record, which has none), the first four named
// ("..., model.layers.3 and 996 more").
std::string layers_of(const std::vector<trace::OpRecord>& records, std::size_t begin,
                      std::size_t end);
// The occurrence of records[index] among the records of its layer and op before it, from 0:
// which "aten.add.Tensor in model.norm" it is.
std::size_t occurrence_of(const std::vector<trace::OpRecord>& records, std::size_t index);

}  // namespace ra::compare
