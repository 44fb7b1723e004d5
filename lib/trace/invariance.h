#pragma once
// A batch-invariance sweep (docs/invariance.md; the file format in docs/trace-format.md,
// "Invariance sweeps"): one model's forward pass on batches of other sizes and compositions,
// each holding the same anchor sample, with the anchor's output and, op by op, the digests of the
// anchor's row of each op's inputs and output. Written by the PyTorch recorder
// (repro_audit.invariance) and by the engine's sweep (`run --invariance`); read by compare.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/digest.h"

namespace ra::trace {

// One tensor an op read or wrote, seen from the anchor: its anchor row where the tensor has the
// batch dimension, else the whole tensor (a weight, a scalar), whose bits cannot depend on the
// batch's other samples unless an earlier op mixed them.
struct RowDigest {
  Digest128 digest;
  bool whole = false;  // no batch dimension: the whole tensor's digest
};

// One op of the forward pass, in execution order.
struct InvarianceOp {
  std::string op;      // "aten.addmm.default", or the engine's op ("dense_forward")
  std::string module;  // the module that ran it ("encoder.fc1"; "" where none is known)
  std::vector<RowDigest> inputs;
  // The anchor's row of the output; absent where the op reduced over the batch (a loss's mean),
  // so that no row of it is the anchor's.
  std::optional<RowDigest> output;
};

// Where the anchor sits in a probe's batch, and what fills the other rows.
struct ProbeConfig {
  int batch_size = 1;
  int anchor_row = 0;              // 0 .. batch_size - 1
  std::string position = "first";  // first | middle | last (named for the report)
  std::string neighbours;  // what fills the other rows: "batch", "noise", ... ("" at size 1)
  bool control = false;    // the control probe: a one-ULP batch-dependent change injected
};

struct InvarianceProbe {
  ProbeConfig config;
  Digest128 output_digest;  // the anchor's row of the model's output
  // The anchor's output row's float32 bits (the model's output converted exactly where it is
  // float16 or bfloat16), for the magnitude in ULPs; empty where the producer did not keep them.
  std::vector<float> output_values;
  std::vector<InvarianceOp> ops;
};

// The control (docs/invariance.md, "The control"): in the control probe the producer changed the
// anchor's row of one op's output by one ULP, only when the batch held other samples. A sweep that
// cannot see that change cannot call anything invariant.
struct InvarianceControl {
  int op_index = 0;  // into the reference probe's ops
  std::string op;
  std::string module;
};

struct InvarianceSweep {
  int version = 1;
  std::string source;  // "pytorch" | "engine"
  std::string model;   // the model's class or the spec's name
  std::string mode;    // the engine's kernel mode; PyTorch: "" (what the script set)
  std::string device;  // "cpu", "cuda:0", ...
  std::string dtype;   // the output's dtype as the producer named it ("float32", "torch.float16")
  int batch_dim = 0;
  std::vector<std::int64_t> sample_shape;  // the anchor's input, without the batch dimension
  std::vector<std::int64_t> output_shape;  // one sample's output, without the batch dimension
  InvarianceProbe reference;               // batch size 1: the anchor alone
  std::vector<InvarianceProbe> probes;     // every other configuration, the control's among them
  std::optional<InvarianceControl> control;
};

// What a sweep runs (docs/invariance.md, "The sweep"): every batch size with the anchor at every
// position (sizes of 1 have one), the other rows filled each way named, and one control probe.
// `exec --invariance` hands it to the script in REPRO_AUDIT_INVARIANCE as JSON
// ({"out": FILE, "sizes": [...], "positions": [...], "neighbours": [...], "control": true}).
struct InvariancePlan {
  std::vector<int> sizes;  // ascending, distinct, each >= 1; 1 is the reference
  std::vector<std::string> positions = {"first", "middle", "last"};
  std::vector<std::string> neighbours = {"batch"};
  bool control = true;
};
// The default sizes up to `max_size`: 1..16, then each power of two and its neighbours
// (2^k - 1, 2^k, 2^k + 1), where kernels switch their blocking.
std::vector<int> default_invariance_sizes(int max_size);
// "1-64,128,255-257" as sorted distinct sizes (1 always among them: the reference); InputError
// naming the piece for a size below 1, a reversed range or anything but digits, '-' and ','.
std::vector<int> parse_invariance_sizes(const std::string& text);
// The anchor's row for `position` in a batch of `size`: first 0, middle size / 2, last size - 1.
int anchor_row(const std::string& position, int size);

// The file: one JSON object a line, a header, the reference probe, then the probes; whole or
// rejected (InputError naming the line and the field).
void write_invariance_sweep(const std::filesystem::path& file, const InvarianceSweep& sweep);
InvarianceSweep read_invariance_sweep(const std::filesystem::path& file);

}  // namespace ra::trace
