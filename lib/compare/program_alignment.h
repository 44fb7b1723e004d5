#pragma once
// Two programs' traces aligned op by op at every step of their op window (`compare A B --align`,
// docs/equivalence.md "Aligning two programs' ops"): which traces can be aligned, and what the
// alignment of their steps found, kept small whatever the window's length (a summary per step,
// the first stretches, the first parting with its two records). The finding's words:
// compare/alignment_finding.cpp; the alignment of one step: compare/op_alignment.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/op_alignment.h"
#include "trace/trace.h"

namespace ra::compare {

// InputError naming the problem when `traces` cannot be aligned as two programs: not two of them,
// one without op records, op windows at different steps, parameters or buffers of different
// names (the first unmatched names of each side listed: parameters pair up by name), or of one
// name and another shape or dtype. The spec digests may differ (two programs have two specs).
// A third trace is the control: a perturbed run of A (--seeds all) with A's op window
// (check_alignment_control), which the alignment must see part from A.
void check_alignable(const std::vector<trace::Trace>& traces);
void check_alignment_control(const trace::Trace& a, const trace::Trace& control);
// The parameters and buffers of two programs' traces pair up by name, each of one shape and dtype
// on both sides; else InputError, its words naming `option` ("--align", "--expect equivalent").
void check_programs_pair_up(const trace::Trace& a, const trace::Trace& b,
                            const std::string& option);

// An unaligned stretch as the report shows it: each side's first record in its step, and how many
// ops (of the step's view, compare/op_families.h: records, but for the engine against PyTorch).
struct StretchSummary {
  std::int64_t step = 0;
  std::size_t a_begin = 0, a_count = 0, b_begin = 0, b_count = 0;
  std::string a_layers, b_layers;         // layers_of each side's records ("" when none)
  std::vector<std::string> a_ops, b_ops;  // each side's op names, the first few
  friend bool operator==(const StretchSummary&, const StretchSummary&) = default;
};

struct StepSummary {
  std::int64_t step = 0;
  std::size_t a_records = 0, b_records = 0, aligned = 0, unaligned = 0;
};

// The first place the programs part (OpParting) with what the report names of it.
struct PartingSummary {
  std::int64_t step = 0;
  OpParting::Kind kind = OpParting::Kind::op;
  // The records whose outputs are the aligned ops' (of a fused run: its last).
  std::size_t a_index = 0, b_index = 0;
  trace::OpRecord a, b;        // the aligned ops (op: the op; others: the first reader)
  std::size_t occurrence = 0;  // of A's op among its layer's ops of its name
  std::vector<std::size_t> positions;
  std::optional<StretchSummary> stretch;  // kind stretch
  // Read from several records (the engine against PyTorch): the records and their op names,
  // else empty; the positions of the ops' outputs in records a_index and b_index.
  std::vector<std::size_t> a_records, b_records;
  std::vector<std::string> a_run, b_run;
  std::vector<std::size_t> a_outputs, b_outputs;
};

// How each side's records are read (compare/op_families.h): as recorded, or, for the engine
// against PyTorch, each side as the engine's ops.
enum class OpReading { as_recorded, engine, pytorch };

struct ProgramAlignment {
  OpReading a_reading = OpReading::as_recorded, b_reading = OpReading::as_recorded;
  std::size_t fused = 0;           // runs of PyTorch records read as one engine op, over the steps
  std::size_t left_out = 0;        // PyTorch records left out: they only pass a value on
  std::vector<StepSummary> steps;  // the window's steps both recorded, in order
  std::vector<StretchSummary> stretches;  // the first kListedStretches unaligned ones
  std::size_t stretches_total = 0;
  std::optional<PartingSummary> parting;  // the first, over the steps in order
  static constexpr std::size_t kListedStretches = 100;
  static constexpr std::size_t kListedOps = 6;  // op names per side of a stretch
};

// Aligns the two traces' op records at every step of the window both recorded, from memory or,
// for a trace read without its steps (Trace::steps_in_source), from its file a step at a time.
// An engine trace against a PyTorch one: each step's records read as the engine's ops
// (compare/op_families.h). InputError when no step of the window was recorded by both, or when
// the engine's model layers are not among the PyTorch run's (the first named).
ProgramAlignment align_programs(const trace::Trace& a, const trace::Trace& b);

}  // namespace ra::compare
